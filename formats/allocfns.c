/*
 * formats/allocfns.c: the table of the malloc family; see allocfns.h.
 */
#include "allocfns.h"

#include <string.h>

#define SIZE "size=%di:u64"
#define PTR "ptr=%di:u64"
#define SZ ALLOC_FN_SIZE_FILTER
#define EV ALLOC_FN_EVERY

const struct alloc_fn_desc alloc_fns[AF_NR] = {
	[AF_MALLOC] = { "malloc", "malloc", ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_CALLOC] = { "calloc", "calloc", ALLOC_OP_ALLOC_N, "nmemb=%di:u64 size=%si:u64", 0 },
	[AF_REALLOC] = { "realloc", "realloc", ALLOC_OP_REALLOC, "ptr=%di:u64 size=%si:u64", EV },
	[AF_REALLOCARRAY] = { "reallocarray", "reallocarray", ALLOC_OP_REALLOC_N,
			      "ptr=%di:u64 nmemb=%si:u64 size=%dx:u64", EV },
	[AF_FREE] = { "free", "free", ALLOC_OP_FREE, PTR, 0 },
	[AF_POSIX_MEMALIGN] = { "posix_memalign", "posix_memalign", ALLOC_OP_ALLOC_OUT,
				"memptr=%di:u64 align=%si:u64 size=%dx:u64", SZ | EV },
	[AF_ALIGNED_ALLOC] = { "aligned_alloc", "aligned_alloc", ALLOC_OP_ALLOC, "align=%di:u64 size=%si:u64", SZ },
	[AF_MEMALIGN] = { "memalign", "memalign", ALLOC_OP_ALLOC, "align=%di:u64 size=%si:u64", SZ },
	[AF_VALLOC] = { "valloc", "valloc", ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_PVALLOC] = { "pvalloc", "pvalloc", ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_NEW] = { "_Znwm", "operator new(unsigned long)", ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_NEW_ARRAY] = { "_Znam", "operator new[](unsigned long)", ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_NEW_NOTHROW] = { "_ZnwmRKSt9nothrow_t", "operator new(unsigned long, std::nothrow_t const&)",
			     ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_NEW_ARRAY_NOTHROW] = { "_ZnamRKSt9nothrow_t", "operator new[](unsigned long, std::nothrow_t const&)",
				   ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_NEW_ALIGNED] = { "_ZnwmSt11align_val_t", "operator new(unsigned long, std::align_val_t)", ALLOC_OP_ALLOC,
			     "size=%di:u64 align=%si:u64", SZ },
	[AF_NEW_ARRAY_ALIGNED] = { "_ZnamSt11align_val_t", "operator new[](unsigned long, std::align_val_t)",
				   ALLOC_OP_ALLOC, "size=%di:u64 align=%si:u64", SZ },
	[AF_NEW_ALIGNED_NOTHROW] = { "_ZnwmSt11align_val_tRKSt9nothrow_t",
				     "operator new(unsigned long, std::align_val_t, std::nothrow_t const&)",
				     ALLOC_OP_ALLOC, "size=%di:u64 align=%si:u64", SZ },
	[AF_NEW_ARRAY_ALIGNED_NOTHROW] = { "_ZnamSt11align_val_tRKSt9nothrow_t",
					   "operator new[](unsigned long, std::align_val_t, std::nothrow_t const&)",
					   ALLOC_OP_ALLOC, "size=%di:u64 align=%si:u64", SZ },
	[AF_DELETE] = { "_ZdlPv", "operator delete(void*)", ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_ARRAY] = { "_ZdaPv", "operator delete[](void*)", ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_SIZED] = { "_ZdlPvm", "operator delete(void*, unsigned long)", ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_ARRAY_SIZED] = { "_ZdaPvm", "operator delete[](void*, unsigned long)", ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_NOTHROW] = { "_ZdlPvRKSt9nothrow_t", "operator delete(void*, std::nothrow_t const&)",
				ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_ARRAY_NOTHROW] = { "_ZdaPvRKSt9nothrow_t", "operator delete[](void*, std::nothrow_t const&)",
				      ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_ALIGNED] = { "_ZdlPvSt11align_val_t", "operator delete(void*, std::align_val_t)", ALLOC_OP_FREE,
				PTR, 0 },
	[AF_DELETE_ARRAY_ALIGNED] = { "_ZdaPvSt11align_val_t", "operator delete[](void*, std::align_val_t)",
				      ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_SIZED_ALIGNED] = { "_ZdlPvmSt11align_val_t",
				      "operator delete(void*, unsigned long, std::align_val_t)", ALLOC_OP_FREE, PTR,
				      0 },
	[AF_DELETE_ARRAY_SIZED_ALIGNED] = { "_ZdaPvmSt11align_val_t",
					    "operator delete[](void*, unsigned long, std::align_val_t)", ALLOC_OP_FREE,
					    PTR, 0 },
	[AF_DELETE_ALIGNED_NOTHROW] = { "_ZdlPvSt11align_val_tRKSt9nothrow_t",
					"operator delete(void*, std::align_val_t, std::nothrow_t const&)",
					ALLOC_OP_FREE, PTR, 0 },
	[AF_DELETE_ARRAY_ALIGNED_NOTHROW] = { "_ZdaPvSt11align_val_tRKSt9nothrow_t",
					      "operator delete[](void*, std::align_val_t, std::nothrow_t const&)",
					      ALLOC_OP_FREE, PTR, 0 },
	/* jemalloc's own API: flags carry alignment and zeroing. */
	[AF_MALLOCX] = { "mallocx", "mallocx", ALLOC_OP_ALLOC, SIZE, SZ },
	[AF_RALLOCX] = { "rallocx", "rallocx", ALLOC_OP_REALLOC, "ptr=%di:u64 size=%si:u64", EV },
	[AF_DALLOCX] = { "dallocx", "dallocx", ALLOC_OP_FREE, PTR, 0 },
	[AF_SDALLOCX] = { "sdallocx", "sdallocx", ALLOC_OP_FREE, PTR, 0 },
	[AF_SAMPLED_ALLOC] = { "memsight_sampled_alloc", "memsight_sampled_alloc", ALLOC_OP_ALLOC_AT,
			       "ptr=%di:u64 size=%si:u64 rate=%dx:u64", 0 },
	[AF_SAMPLED_FREE] = { "memsight_sampled_free", "memsight_sampled_free", ALLOC_OP_FREE, PTR, 0 },
	/* Their fetchargs come from each site's note. */
	[AF_OTEL_ALLOC] = { "otel_memory_alloc", "otel_memory:alloc", ALLOC_OP_ALLOC_AT, "", SZ },
	[AF_OTEL_FREE] = { "otel_memory_free", "otel_memory:free", ALLOC_OP_FREE, "", 0 },
	/* Every sample kept: its frees among them. */
	[AF_OTEL_SITES] = { "otel_memory", "otel_memory", ALLOC_OP_ALLOC_AT, "", EV },
	/* Their fetchargs are each function's own. */
	[AF_ALLOCS] = { "allocs", "allocs", ALLOC_OP_ALLOC, "", 0 },
	[AF_FREES] = { "frees", "frees", ALLOC_OP_FREE, "", 0 },
};

int alloc_fn_lookup(const char *event, size_t len, int *ret)
{
	size_t d = len;

	*ret = len > 4 && !memcmp(event + len - 4, "_ret", 4);
	if (*ret)
		len -= 4;
	/* A USDT probe's second and later sites: "NAME__N". */
	while (d > 0 && event[d - 1] >= '0' && event[d - 1] <= '9')
		d--;
	if (!*ret && d < len && d > 2 && event[d - 1] == '_' && event[d - 2] == '_')
		len = d - 2;
	for (int k = 0; k < AF_NR; k++)
		if (strlen(alloc_fns[k].symbol) == len && !memcmp(alloc_fns[k].symbol, event, len))
			return k;
	return -1;
}

int alloc_fn_is_entry(const char *sym)
{
	if (!sym)
		return 0;
	for (int k = 0; k < AF_SAMPLED_FIRST; k++)
		if (!strcmp(alloc_fns[k].name, sym) || !strcmp(alloc_fns[k].symbol, sym))
			return 1;
	return 0;
}

int alloc_object_is_allocator(const char *path)
{
	static const char *const names[] = { "libc.so", "libc-2.", "libjemalloc.so", "libtcmalloc", "libmimalloc.so" };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!strncmp(base, names[k], strlen(names[k])))
			return 1;
	return 0;
}
