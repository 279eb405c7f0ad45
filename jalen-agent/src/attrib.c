/* attrib.c - see attrib.h */
#include "attrib.h"

double jl_attrib_sample(double thread_j, int w, int thread_samples, int java)
{
    if (!java || thread_samples <= 0 || w <= 0)
        return 0;
    return thread_j * w / thread_samples;
}

int jl_attrib_frame(int kind, int samples, const int pseudo[JL_ATTRIB_NFRAMES])
{
    if (kind == 0)
        return samples > 0 ? -1 : pseudo[JL_ATTRIB_NOSAMPLE];
    if (kind > 0 && kind < JL_ATTRIB_NOSAMPLE)
        return pseudo[kind];
    return pseudo[3]; /* the VM's */
}

double jl_attrib_net(double net_j, double bytes, double all_bytes)
{
    return all_bytes > 0 && bytes > 0 ? net_j * bytes / all_bytes : 0;
}

double jl_attrib_net_left(double net_j, double all_bytes)
{
    return all_bytes > 0 ? 0 : net_j;
}

double jl_attrib_ended_cpu(double final_s, double seen_s)
{
    return final_s >= 0 && final_s > seen_s ? final_s - seen_s : 0;
}

double jl_attrib_window(double cpu_j, jl_attrib_thread *t, size_t n,
                        const int pseudo[JL_ATTRIB_NFRAMES])
{
    double all = 0;
    for (size_t i = 0; i < n; i++)
        all += t[i].cpu_s > 0 ? t[i].cpu_s : 0;
    double left = cpu_j;
    for (size_t i = 0; i < n; i++) {
        t[i].cpu_j = all > 0 && t[i].cpu_s > 0 ? cpu_j * t[i].cpu_s / all : 0;
        left -= t[i].cpu_j;
        t[i].frame = jl_attrib_frame(t[i].kind, t[i].samples > 0, pseudo);
    }
    return left > 1e-12 ? left : 0;
}
