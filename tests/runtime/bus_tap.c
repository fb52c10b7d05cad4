/* LD_PRELOADed into models/mlp by tests/runtime/transfers.sh. StarPU 1.3
 * resets a bus's counters when starpu_bus_get_profiling_info reads them, so
 * after starnn's reads (starnn_transfers_read) STARPU_BUS_STATS=1's table at
 * exit shows only what moved after the last of them. This wraps the
 * function: what it returns to callers outside libstarpu (starnn) is kept
 * per bus and added back into what it returns to libstarpu itself (the
 * table at exit, whose call goes through the PLT), so that the table shows
 * every transfer since start-up, as if starnn had read nothing. For each
 * bus it also says on stderr what StarPU counted after starnn's last read:
 *
 *     bus_tap: bus 0 -> 1: after starnn's reads 1234 bytes in 5 transfers
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <starpu.h>
#include <starpu_profiling.h>

#define BUSES 1024

static long long given_bytes[BUSES], given_count[BUSES];

int starpu_bus_get_profiling_info(int busid, struct starpu_profiling_bus_info *bus_info)
{
	static int (*real)(int, struct starpu_profiling_bus_info *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "starpu_bus_get_profiling_info");
	if (!real)
		return -1;
	struct starpu_profiling_bus_info info;
	int rc = real(busid, &info);
	if (rc != 0 || busid < 0 || busid >= BUSES) {
		if (bus_info)
			*bus_info = info;
		return rc;
	}
	Dl_info where;
	int starpu = dladdr(__builtin_return_address(0), &where) && where.dli_fname &&
	             strstr(where.dli_fname, "libstarpu");
	if (starpu) {
		fprintf(stderr, "bus_tap: bus %d -> %d: after starnn's reads %lld bytes in %d transfers\n",
		        starpu_bus_get_src(busid), starpu_bus_get_dst(busid), info.transferred_bytes, info.transfer_count);
		info.transferred_bytes += given_bytes[busid];
		info.transfer_count += (int)given_count[busid];
	} else {
		given_bytes[busid] += info.transferred_bytes;
		given_count[busid] += info.transfer_count;
	}
	if (bus_info)
		*bus_info = info;
	return rc;
}
