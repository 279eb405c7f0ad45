/* fuzz_drm_fdinfo.c - the drm-gpu sensor's parsers (issue 28): a DRM
 * client's fdinfo text (pa_gpu_fdinfo_parse), and a device's hwmon and
 * uevent files read by pa_gpu_devices.  Pieces: the fdinfo text, the
 * uevent, the hwmon value (written as power1_average and energy1_input). */
#include "fuzz.h"

#include "../../sensors/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[3];
    size_t n = fz_split(data, size, pc, 3);
    char *text = fz_strdup(&pc[0]);
    pa_gpu_client c;
    if (pa_gpu_fdinfo_parse(text, &c) == 0 &&
        (!memchr(c.driver, '\0', sizeof(c.driver)) || !memchr(c.pdev, '\0', sizeof(c.pdev))))
        fz_fail("drm fdinfo: a field not terminated");
    free(text);
    if (n > 1) {
        const char *root = fz_root(NULL);
        fz_write(root, "class/drm/card0/device/uevent", pc[1].p, pc[1].n);
        const fz_piece *v = n > 2 ? &pc[2] : &pc[1];
        fz_write(root, "class/drm/card0/device/hwmon/hwmon0/power1_average", v->p, v->n);
        fz_write(root, "class/drm/card1/device/hwmon/hwmon1/energy1_input", v->p, v->n);
        pa_gpu_dev d[PA_GPU_MAX_DEVS];
        int k = pa_gpu_devices(root, d, PA_GPU_MAX_DEVS);
        for (int i = 0; i < k; i++)
            if (!memchr(d[i].pdev, '\0', sizeof(d[i].pdev)) ||
                !memchr(d[i].driver, '\0', sizeof(d[i].driver)) || d[i].power_w < 0 ||
                d[i].energy_j < 0)
                fz_fail("drm hwmon: device %d out of bounds", i);
    }
    return 0;
}
