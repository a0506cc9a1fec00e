/*
 * tests/helper/test-unit.c: unit tests of the analyzer's internals, run
 * without root, perf or a recording. Each prints TAP lines ("ok N - what"
 * or "not ok N - what: why"); the shell test counts them.
 *
 *   test-tool hashmap      u64 and string maps against a reference
 *   test-tool suppress     pattern forms and the built-in runtime list
 *   test-tool json         the writer's escapes, nesting and numbers; the
 *                          document goes to stdout after the TAP lines,
 *                          after a line "--"
 *   test-tool symcheck OBJ [STEP]
 *                          every STEP-th byte of OBJ's executable code
 *                          named through the symbol intervals and by
 *                          libdwfl directly: the names must agree
 *   test-tool catalog      the event catalogue: every event in a listed
 *                          group, every group but malloc with events, no
 *                          event twice in a group, names of the right form
 *   test-tool crc          a chunk's CRC from its payload's CRC is the
 *                          one made from the payload
 */
#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../analyze/cmd/json.h"
#include "../../analyze/sha256.h"
#include "../../analyze/hashmap.h"
#include "../../analyze/model/suppress.h"
#include "../../analyze/replay/session.h"
#include "../../analyze/stacks/symbols.h"
#include "../../formats/catalog.h"
#include "../../formats/trace_int.h"
#include "test-unit.h"

static int tap_n, tap_failed;

static void tap(int ok, const char *what, const char *why)
{
	tap_n++;
	if (ok)
		printf("ok %d - %s\n", tap_n, what);
	else
		printf("not ok %d - %s: %s\n", tap_n, what, why);
	tap_failed |= !ok;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- hashmap ---------------------------------------------------------- */

static size_t map_count(const struct hashmap *m)
{
	size_t n = 0;

	hashmap_for_each(m, s) n++;
	return n;
}

/* keys[i] maps to i; those with present[i] must be found with it, the
 * others not at all. */
static int map_agrees(const struct hashmap *m, const uint64_t *keys, const unsigned char *present, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct hm_slot *s = hashmap_u64_find(m, keys[i]);

		if (present[i] ? !s || s->val != i : s != NULL)
			return 0;
	}
	return 1;
}

static void unit_hashmap_u64(const char *what, uint64_t (*key)(uint64_t *, size_t), size_t n)
{
	uint64_t *keys = calloc(n, sizeof(*keys)), seed = 42;
	unsigned char *present = calloc(n, 1);
	struct hashmap m;
	int fresh = 1, again = 1;
	char label[128];

	hashmap_init(&m, 0);
	for (size_t i = 0; i < n; i++) {
		struct hm_slot *s;
		int created;

		keys[i] = key(&seed, i);
		s = hashmap_u64(&m, keys[i], &created);
		fresh &= s && created && s->val == 0;
		if (s)
			s->val = i;
		present[i] = 1;
	}
	for (size_t i = 0; i < n; i++) {
		int created;

		again &= hashmap_u64(&m, keys[i], &created) && !created;
	}
	snprintf(label, sizeof(label), "u64 map, %s: %zu inserts, each new once, then found", what, n);
	tap(fresh && again && map_agrees(&m, keys, present, n) && map_count(&m) == n, label,
	    "a key was lost, duplicated or found new twice");

	for (size_t i = 0; i < n; i += 3) {
		hashmap_u64_remove(&m, keys[i]);
		present[i] = 0;
	}
	snprintf(label, sizeof(label), "u64 map, %s: a third removed, the rest still found", what);
	tap(map_agrees(&m, keys, present, n) && map_count(&m) == n - (n + 2) / 3, label,
	    "a removal took another key with it or left its own");

	for (size_t i = 0; i < n; i += 3) {
		int created;
		struct hm_slot *s = hashmap_u64(&m, keys[i], &created);

		if (s)
			s->val = i;
		present[i] = s && created;
	}
	snprintf(label, sizeof(label), "u64 map, %s: the removed ones inserted again", what);
	tap(map_agrees(&m, keys, present, n) && map_count(&m) == n, label, "reinsertion went wrong");
	hashmap_release(&m);
	free(keys);
	free(present);
}

static uint64_t key_random(uint64_t *seed, size_t i)
{
	/* The extremes too: 0 and all ones are keys like any other. */
	if (i == 0)
		return 0;
	if (i == 1)
		return UINT64_MAX;
	return splitmix(seed);
}

static uint64_t key_high_bits(uint64_t *seed, size_t i)
{
	(void)seed;
	return (uint64_t)i << 32;
}

static uint64_t key_pages(uint64_t *seed, size_t i)
{
	(void)seed;
	return 0x7f0000000000ull + (uint64_t)i * 4096;
}

static void unit_hashmap_str(size_t n)
{
	struct hashmap m;
	char buf[64];
	int ok = 1;

	hashmap_init(&m, 1);
	for (size_t i = 0; i < n; i++) {
		int created;
		struct hm_slot *s;

		snprintf(buf, sizeof(buf), "key-%zu", i);
		s = hashmap_str(&m, buf, &created);
		ok &= s && created;
		if (s)
			s->val = i;
		/* The map keeps its own copy of the key. */
		memset(buf, 'x', sizeof(buf) - 1);
	}
	for (size_t i = 0; i < n && ok; i++) {
		struct hm_slot *s;

		snprintf(buf, sizeof(buf), "key-%zu", i);
		s = hashmap_str_find(&m, buf);
		ok &= s && s->val == i && !strcmp(s->skey, buf);
	}
	ok &= !hashmap_str_find(&m, "key-") && !hashmap_str_find(&m, "") && map_count(&m) == n;
	tap(ok, "string map: keys copied, each found with its value, near misses not found",
	    "a lookup disagreed");
	hashmap_release(&m);
}

static int unit_hashmap(void)
{
	unit_hashmap_u64("random keys with 0 and ~0", key_random, 200000);
	unit_hashmap_u64("keys alike in their low 32 bits", key_high_bits, 50000);
	unit_hashmap_u64("page addresses", key_pages, 100000);
	unit_hashmap_str(50000);
	tap(hash_bytes("abc", 3) == hash_bytes("abc", 3) && hash_bytes("abc", 3) != hash_bytes("abd", 3) &&
		    hash_words((const uint64_t[]){ 1, 2 }, 2) != hash_words((const uint64_t[]){ 2, 1 }, 2),
	    "hashes are stable and tell order and content apart", "two inputs hashed alike");
	return tap_failed;
}

/* ---- suppressions ----------------------------------------------------- */

/* A stack written "sym@obj;sym@obj;...", innermost first. */
static int stack_parse(char *text, struct frame *f, int max)
{
	int n = 0;

	for (char *save = NULL, *t = strtok_r(text, ";", &save); t && n < max; t = strtok_r(NULL, ";", &save)) {
		char *at = strchr(t, '@');

		memset(&f[n], 0, sizeof(f[n]));
		if (at)
			*at = 0;
		f[n].sym = *t ? t : NULL;
		f[n].obj = at ? at + 1 : NULL;
		f[n].ret = n > 0;
		n++;
	}
	return n;
}

static void suppress_case(const struct suppress *s, const char *stack, const char *want)
{
	char text[512], label[700], why[256];
	struct frame f[16];
	const char *got;
	int n;

	snprintf(text, sizeof(text), "%s", stack);
	n = stack_parse(text, f, 16);
	got = suppress_match(s, f, n);
	snprintf(label, sizeof(label), "%s -> %s", stack, want ? want : "kept");
	snprintf(why, sizeof(why), "got %s", got ? got : "kept");
	tap(want ? got && !strcmp(got, want) : !got, label, why);
}

static int unit_suppress(void)
{
	static const char *const user[] = { "leaky_cache", "^init_", "_table$", "parse*node", "libplugin.so", NULL };
	char path[] = "/tmp/memsight-supp-XXXXXX";
	struct suppress s;
	char err[256];
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		return 1;
	fprintf(f, "# comments and blank lines are skipped\n\n");
	for (int i = 0; user[i]; i++)
		fprintf(f, "  leak:%s  \n", user[i]);
	fclose(f);

	suppress_init(&s);
	tap(suppress_load(&s, path, err, sizeof(err)) == 0 && s.nr == 5, "a suppression file loads", err);
	/* A pattern matches a function or an object anywhere in the stack. */
	suppress_case(&s, "malloc@/lib/libc.so.6;grow@/bin/app;leaky_cache_fill@/bin/app;main@/bin/app", "leaky_cache");
	suppress_case(&s, "malloc@/lib/libc.so.6;init_tables@/bin/app", "^init_");
	suppress_case(&s, "malloc@/lib/libc.so.6;reinit_tables@/bin/app", NULL);
	suppress_case(&s, "malloc@/lib/libc.so.6;make_table@/bin/app", "_table$");
	suppress_case(&s, "malloc@/lib/libc.so.6;make_tables@/bin/app", NULL);
	suppress_case(&s, "malloc@/lib/libc.so.6;parse_json_node@/bin/app", "parse*node");
	suppress_case(&s, "malloc@/lib/libc.so.6;parse_json@/bin/app", NULL);
	suppress_case(&s, "malloc@/lib/libc.so.6;@/usr/lib/libplugin.so.2;main@/bin/app", "libplugin.so");
	suppress_case(&s, "malloc@/lib/libc.so.6;work@/bin/app;main@/bin/app", NULL);
	suppress_release(&s);

	/* The built-in list: the runtime's own allocations, found among the
	 * runtime's frames above the program's first. */
	suppress_init(&s);
	suppress_add_defaults(&s);
	suppress_case(&s, "malloc@/lib/libc.so.6;strdup@/lib/libc.so.6;tzset_internal@/lib/libc.so.6;"
			  "localtime@/lib/libc.so.6;main@/bin/app",
		      "tzset_internal");
	suppress_case(&s, "malloc@/lib/libc.so.6;_IO_file_doallocate@/lib/libc.so.6;puts@/lib/libc.so.6;main@/bin/app",
		      "_IO_file_doallocate");
	suppress_case(&s, "calloc@/lib/libc.so.6;_dl_allocate_tls@/lib64/ld-linux-x86-64.so.2", "^_dl_");
	/* The program's strdup is the program's leak, and so is an allocation
	 * the program made in a constructor the loader called. */
	suppress_case(&s, "malloc@/lib/libc.so.6;strdup@/lib/libc.so.6;main@/bin/app", NULL);
	suppress_case(&s, "malloc@/lib/libc.so.6;setup@/bin/app;_dl_init@/lib64/ld-linux-x86-64.so.2", NULL);
	/* The allocator's own frame is not the runtime allocating for itself. */
	suppress_case(&s, "_dl_fake@/lib/libc.so.6;main@/bin/app", NULL);
	suppress_release(&s);

	suppress_init(&s);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "leak:ok\nfun:bad\n");
		fclose(f);
	}
	tap(suppress_load(&s, path, err, sizeof(err)) < 0 && strstr(err, ":2: expected 'leak:PATTERN'"),
	    "a line that is not leak:PATTERN is refused with its line number", err);
	suppress_release(&s);
	unlink(path);
	return tap_failed;
}

/* ---- JSON writer ------------------------------------------------------ */

static int unit_json(void)
{
	char *doc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&doc, &len);
	struct json j;
	static const char want[] =
		"{\"quote\\\"back\\\\slash\":\"tab\\u0009nl\\u000a\\u0001\",\"utf8\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x90\x98\","
		"\"bad\":\"a\\ufffdb\\ufffd\\ufffd\\ufffd\\ufffdc\\ufffd\\ufffd\\ufffd\",\"null_str\":\"\",\"u64\":18446744073709551615,"
		"\"i64\":-9223372036854775808,\"d\":0.125,\"nan\":null,\"inf\":null,\"t\":true,\"f\":false,\"n\":null,"
		"\"empty\":{},\"list\":[1,{\"k\":[]},[[]],\"s\"]}\n";

	if (!f)
		return 1;
	json_init(&j, f);
	json_begin(&j, NULL);
	json_str(&j, "quote\"back\\slash", "tab\tnl\n\x01");
	json_str(&j, "utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x90\x98");
	/* Each byte that does not start well-formed UTF-8 (a lone
	 * continuation, a cut sequence, an overlong form, a surrogate) becomes
	 * one U+FFFD: a symbol name from a damaged object must not make the
	 * document unreadable. */
	json_str(&j, "bad", "a\x80" "b\xe2\x82" "\xc0\xaf" "c\xed\xa0\x80");
	json_str(&j, "null_str", NULL);
	json_u64(&j, "u64", UINT64_MAX);
	json_i64(&j, "i64", INT64_MIN);
	json_double(&j, "d", "%.3g", 0.125);
	json_double(&j, "nan", "%.3f", NAN);
	json_double(&j, "inf", "%.3f", INFINITY);
	json_bool(&j, "t", 1);
	json_bool(&j, "f", 0);
	json_null(&j, "n");
	json_begin(&j, "empty");
	json_end(&j);
	json_begin_array(&j, "list");
	json_u64(&j, NULL, 1);
	json_begin(&j, NULL);
	json_begin_array(&j, "k");
	json_end(&j);
	json_end(&j);
	json_begin_array(&j, NULL);
	json_begin_array(&j, NULL);
	json_end(&j);
	json_end(&j);
	json_str(&j, NULL, "s");
	json_end(&j);
	json_end(&j);
	fclose(f);
	tap(len == sizeof(want) - 1 && !memcmp(doc, want, len), "the document is written byte for byte as expected",
	    "it differs (the document follows the TAP lines)");
	printf("--\n%s", doc);
	free(doc);
	return tap_failed;
}

/* ---- interval naming -------------------------------------------------- */

static int unit_symcheck(const char *path, unsigned step)
{
	struct symbols syms;
	struct symbols_opts o = { .check = 1 };
	uint64_t named = 0, lookups = 0;
	int fd = open(path, O_RDONLY);
	Elf *elf;
	size_t nph = 0;
	struct dso *d;
	char why[256], *real = realpath(path, NULL);

	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf || elf_getphdrnum(elf, &nph) || symbols_init(&syms, &o)) {
		fprintf(stderr, "test-tool symcheck: cannot read '%s' as ELF\n", path);
		return 1;
	}
	d = real ? symbols_dso(&syms, real, NULL, 0) : NULL;
	for (size_t i = 0; d && i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		for (uint64_t off = ph.p_offset; off < ph.p_offset + ph.p_filesz; off += step) {
			uint64_t symoff;

			named += symbols_lookup(d, off, 0, &symoff) != NULL;
			lookups++;
		}
	}
	snprintf(why, sizeof(why), "%llu of %llu lookups differ from libdwfl's own",
		 (unsigned long long)syms.differ, (unsigned long long)syms.checked);
	tap(d && syms.checked == lookups && lookups > 0 && !syms.differ,
	    "every address named through the intervals as libdwfl names it", why);
	snprintf(why, sizeof(why), "%llu of %llu named", (unsigned long long)named, (unsigned long long)lookups);
	tap(named * 2 > lookups, "most code has a name", why);
	printf("# %s: %llu lookups, %llu named\n", path, (unsigned long long)lookups, (unsigned long long)named);
	symbols_release(&syms);
	free(real);
	elf_end(elf);
	close(fd);
	return tap_failed;
}

/* ---- the event catalogue ---------------------------------------------- */

static const char *const catalog_groups[] = {
#define GROUP_NAME(name, help) name,
	CATALOG_GROUPS(GROUP_NAME)
#undef GROUP_NAME
};

#define TP 0
#define SW 1
#define SW_ELSE 2
#define SYSCALL 3
#define PAST 4
static const struct {
	const char *group, *event;
	int type;
	unsigned long long config;
	int stack, addr;
	const char *kind;
	const char *fields[12];
} catalog_events[] = {
#define EVENT_ROW(group, event, type, config, stack, addr, kind, ...) \
	{ group, event, type, config, stack, addr, #kind, { __VA_ARGS__ } },
	CATALOG_EVENTS(EVENT_ROW)
#undef EVENT_ROW
};

static int group_index(const char *g)
{
	for (size_t i = 0; i < sizeof(catalog_groups) / sizeof(*catalog_groups); i++)
		if (!strcmp(catalog_groups[i], g))
			return (int)i;
	return -1;
}

static int unit_catalog(void)
{
	size_t ng = sizeof(catalog_groups) / sizeof(*catalog_groups);
	size_t ne = sizeof(catalog_events) / sizeof(*catalog_events);
	int listed = 1, form = 1, twice = 0, empty = 0;
	char why[256] = "";

	for (size_t i = 0; i < ne; i++) {
		const char *e = catalog_events[i].event;
		int tp = catalog_events[i].type == TP || catalog_events[i].type == SYSCALL ||
			 catalog_events[i].type == PAST;
		int stands_in = 0;

		/* A software event that stands in for tracepoints needs some
		 * of its group and kind. */
		for (size_t k = 0; catalog_events[i].type == SW_ELSE && k < ne; k++)
			stands_in |= catalog_events[k].type != SW && catalog_events[k].type != SW_ELSE &&
				     !strcmp(catalog_events[k].group, catalog_events[i].group) &&
				     !strcmp(catalog_events[k].kind, catalog_events[i].kind);
		/* Its arguments are read from registers at the call's exit. */
		if (catalog_events[i].type == SYSCALL && strncmp(e, "syscalls:sys_exit_", 18)) {
			form = 0;
			snprintf(why, sizeof(why), "%s is a SYSCALL event but no syscall's exit", e);
		}
		/* Its fields: "ret", then at most as many arguments as registers
		 * pass. */
		if (catalog_events[i].type == SYSCALL &&
		    (!catalog_events[i].fields[0] || strcmp(catalog_events[i].fields[0], "ret") ||
		     !catalog_events[i].fields[1] || catalog_events[i].fields[CATALOG_SYSCALL_NR_ARGS + 1])) {
			form = 0;
			snprintf(why, sizeof(why), "%s: a SYSCALL event names ret, then 1 to %d arguments", e,
				 CATALOG_SYSCALL_NR_ARGS);
		}
		if (catalog_events[i].type == SW_ELSE && !stands_in) {
			form = 0;
			snprintf(why, sizeof(why), "%s stands in for no tracepoint of its group and kind", e);
		}

		if (group_index(catalog_events[i].group) < 0) {
			listed = 0;
			snprintf(why, sizeof(why), "%s is in group %s, which -e does not list", e,
				 catalog_events[i].group);
		}
		/* A tracepoint is system:name; a software event is perf's name
		 * and a PERF_COUNT_SW_ id. */
		if (tp ? !strchr(e, ':') || strchr(e, ' ') : strchr(e, ':') || catalog_events[i].config >= PERF_COUNT_SW_MAX)
			form = 0;
		for (size_t k = 0; k < i; k++)
			twice |= !strcmp(catalog_events[k].group, catalog_events[i].group) &&
				 !strcmp(catalog_events[k].event, e);
	}
	tap(listed, "every event is in a group -e lists", why);
	tap(form, "every tracepoint is system:name, every software event a perf id, every stand-in stands in",
	    why[0] ? why : "one is not");
	tap(!twice, "no event is listed twice in one group", "one is");
	for (size_t g = 0; g < ng; g++) {
		int n = 0;

		for (size_t i = 0; i < ne; i++)
			n += !strcmp(catalog_events[i].group, catalog_groups[g]);
		/* malloc's events are uprobes, made per allocator. */
		if (!n != !strcmp(catalog_groups[g], "malloc")) {
			empty = 1;
			snprintf(why, sizeof(why), "group %s has %d events", catalog_groups[g], n);
		}
		printf("# %s %d\n", catalog_groups[g], n);
	}
	tap(!empty, "every group but malloc has events", why);
	return tap_failed;
}

/* The hex SHA-256 of a file, read in pieces of odd sizes so that every
 * path through the buffering is taken; sha256sum checks it. */
static int unit_sha256(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char buf[997], out[32];
	struct sha256 c;
	size_t n, step = 1;

	if (!f)
		return 1;
	sha256_init(&c);
	while ((n = fread(buf, 1, step, f)) > 0) {
		sha256_update(&c, buf, n);
		step = step * 7 % 997 + 1;
	}
	fclose(f);
	sha256_final(&c, out);
	for (int i = 0; i < 32; i++)
		printf("%02x", out[i]);
	printf("\n");
	return 0;
}

/* ---- names ------------------------------------------------------------ */

/* C++ names as the symbols give them by default: template arguments as
 * <>, operators whole. */
static int unit_names(void)
{
	static const char *const cases[][2] = {
		{ "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, "
		  "std::vector<int, std::allocator<int> > >, int const&)",
		  "std::vector<>::_M_realloc_insert<>(__gnu_cxx::__normal_iterator<>, int const&)" },
		{ "demo::Cache::remember(int)", "demo::Cache::remember(int)" },
		{ "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
		  "(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
		  "std::basic_ostream<>& std::operator<< <>(std::basic_ostream<>&, char const*)" },
		{ "bool operator<(Key const&, Key const&)", "bool operator<(Key const&, Key const&)" },
		{ "Iter<T>::operator->() const", "Iter<>::operator->() const" },
		{ "auto operator<=><Foo>(Foo const&, Foo const&)", "auto operator<=><>(Foo const&, Foo const&)" },
		{ "unbalanced<int", "unbalanced<int" },
		{ "malloc", "malloc" },
	};
	char buf[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i][0]);
		symbols_shorten(buf);
		tap(!strcmp(buf, cases[i][1]), cases[i][1], buf);
	}
	return tap_failed;
}

/* ---- chunk CRCs -------------------------------------------------------- */

/* A chunk's CRC made from its payload's CRC (crc32_combine) is the one a
 * pass over the payload makes: for payloads of lengths around zlib's
 * word and block sizes, with a linear file's seed and ring segments'. */
static int unit_crc(void)
{
	static const size_t lens[] = { 0, 1, 7, 8, 4095, 65536 + 3, (1u << 20) + 11 };
	uint64_t x = 42;
	unsigned char *p = malloc((1u << 20) + 11), h[32];

	if (!p)
		return 1;
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		char what[64], why[96] = "";
		int ok = 1;

		for (int round = 0; round < 8 && ok; round++) {
			uint32_t seed = round ? trace_segment_seed(splitmix(&x)) : 0, pcrc, a, b;

			for (size_t i = 0; i < sizeof(h); i++)
				h[i] = (unsigned char)splitmix(&x);
			for (size_t i = 0; i < lens[k]; i++)
				p[i] = (unsigned char)splitmix(&x);
			pcrc = (uint32_t)crc32(0, p, (uInt)lens[k]);
			a = trace_chunk_crc(seed, h, p, lens[k]);
			b = trace_chunk_crc_known(seed, h, pcrc, lens[k]);
			if (a != b) {
				ok = 0;
				snprintf(why, sizeof(why), "seed %08x: %08x from the payload, %08x from its CRC", seed, a, b);
			}
		}
		snprintf(what, sizeof(what), "%zu bytes", lens[k]);
		tap(ok, what, why);
	}
	free(p);
	return tap_failed;
}

int unit_main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "crc"))
		return unit_crc();
	if (argc == 2 && !strcmp(argv[1], "names"))
		return unit_names();
	if (argc == 3 && !strcmp(argv[1], "sha256"))
		return unit_sha256(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "hashmap"))
		return unit_hashmap();
	if (argc == 2 && !strcmp(argv[1], "suppress"))
		return unit_suppress();
	if (argc == 2 && !strcmp(argv[1], "json"))
		return unit_json();
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "symcheck"))
		return unit_symcheck(argv[2], argc == 4 ? (unsigned)strtoul(argv[3], NULL, 0) : 1);
	if (argc == 2 && !strcmp(argv[1], "catalog"))
		return unit_catalog();
	return -1;
}
