/* attrib.c - see attrib.h */
#include "attrib.h"

double jl_attrib_threads(double cpu_j, const double *cpu_s, double *out_j, size_t n)
{
    double all = 0;
    for (size_t i = 0; i < n; i++)
        all += cpu_s[i] > 0 ? cpu_s[i] : 0;
    double left = cpu_j;
    for (size_t i = 0; i < n; i++) {
        out_j[i] = all > 0 && cpu_s[i] > 0 ? cpu_j * cpu_s[i] / all : 0;
        left -= out_j[i];
    }
    return left;
}

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
