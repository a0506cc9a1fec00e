/*
 * record/probes/usdt.c: USDT probes as uprobe definitions; see usdt.h.
 *
 * A SystemTap SDT note (type 3, owner "stapsdt") holds three addresses and
 * three strings: the site (pc), the link-time address of the
 * .stapsdt.base section (base: a prelinked object moved its sections, and
 * pc moves as base did), the semaphore (0 for none), then the provider,
 * the probe's name and its arguments, space-separated "SIZE@OPERAND".
 */
#include "usdt.h"

#include <ctype.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT_STAPSDT 3

/* x86-64 register names as the kernel's fetchargs spell them, from any
 * width of the register. */
static const char *reg_name(const char *r, size_t n)
{
	static const struct {
		const char *names[4];
		const char *fetch;
	} regs[] = {
		{ { "rax", "eax", "ax", "al" }, "ax" },	   { { "rbx", "ebx", "bx", "bl" }, "bx" },
		{ { "rcx", "ecx", "cx", "cl" }, "cx" },	   { { "rdx", "edx", "dx", "dl" }, "dx" },
		{ { "rsi", "esi", "si", "sil" }, "si" },   { { "rdi", "edi", "di", "dil" }, "di" },
		{ { "rbp", "ebp", "bp", "bpl" }, "bp" },   { { "rsp", "esp", "sp", "spl" }, "sp" },
		{ { "r8", "r8d", "r8w", "r8b" }, "r8" },   { { "r9", "r9d", "r9w", "r9b" }, "r9" },
		{ { "r10", "r10d", "r10w", "r10b" }, "r10" }, { { "r11", "r11d", "r11w", "r11b" }, "r11" },
		{ { "r12", "r12d", "r12w", "r12b" }, "r12" }, { { "r13", "r13d", "r13w", "r13b" }, "r13" },
		{ { "r14", "r14d", "r14w", "r14b" }, "r14" }, { { "r15", "r15d", "r15w", "r15b" }, "r15" },
		{ { "rip", "eip", "ip", "" }, "ip" },
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int w = 0; w < 4; w++)
			if (regs[i].names[w][0] && strlen(regs[i].names[w]) == n && !strncmp(r, regs[i].names[w], n))
				return regs[i].fetch;
	return NULL;
}

/* One "SIZE@OPERAND" as a fetcharg into out; "" when it cannot be said
 * (an index register, a symbol relative to %rip). */
static void arg_translate(const char *a, size_t n, char *out, size_t len)
{
	char type[8], op[48];
	const char *at = memchr(a, '@', n), *paren, *reg;
	long size;
	size_t ol;

	out[0] = 0;
	if (!at || (size_t)(a + n - at - 1) >= sizeof(op))
		return;
	size = strtol(a, NULL, 10);
	if (size == 0 || labs(size) > 8 || (labs(size) & (labs(size) - 1)))
		return;
	snprintf(type, sizeof(type), "%c%d", size < 0 ? 's' : 'u', (int)(8 * labs(size)));
	ol = a + n - at - 1;
	memcpy(op, at + 1, ol);
	op[ol] = 0;
	if (op[0] == '%') {
		if ((reg = reg_name(op + 1, ol - 1)))
			snprintf(out, len, "%%%s:%s", reg, type);
		return;
	}
	if (op[0] == '$') {
		char *end;
		long long v = strtoll(op + 1, &end, 0);

		if (end != op + 1 && !*end)
			snprintf(out, len, "\\%lld:%s", v, type);
		return;
	}
	/* OFF(%reg) or (%reg): memory at a register plus an offset. */
	paren = strchr(op, '(');
	if (paren && paren[1] == '%' && op[ol - 1] == ')' && !strchr(paren, ',')) {
		char *end;
		long long off = paren == op ? 0 : strtoll(op, &end, 0);

		if (paren != op && end != paren)
			return;
		if ((reg = reg_name(paren + 2, (size_t)(op + ol - 1 - paren - 2))) && strcmp(reg, "ip"))
			snprintf(out, len, "%+lld(%%%s):%s", off, reg, type);
	}
}

/* The file offset of a virtual address, by the loadable segments; 0 for
 * one outside them. */
static uint64_t file_offset(Elf *elf, uint64_t vaddr)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph))
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static int section_addr(Elf *elf, const char *want, uint64_t *addr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, want)) {
			*addr = sh.sh_addr;
			return 0;
		}
	}
	return -1;
}

/* One note's description: pc, base, semaphore, provider, name, args. */
static int note_site(Elf *elf, const unsigned char *d, size_t n, const char *provider, uint64_t base_now,
		     int have_base, struct usdt_site *s)
{
	uint64_t pc, base, sem;
	const char *prov, *name, *args, *end = (const char *)d + n;
	size_t pl;

	if (n < 24 + 3)
		return -1;
	memcpy(&pc, d, 8);
	memcpy(&base, d + 8, 8);
	memcpy(&sem, d + 16, 8);
	prov = (const char *)d + 24;
	pl = strnlen(prov, end - prov);
	if (prov + pl >= end || strcmp(prov, provider))
		return -1;
	name = prov + pl + 1;
	if (name + strnlen(name, end - name) >= end)
		return -1;
	args = name + strlen(name) + 1;
	if (args >= end || args + strnlen(args, end - args) >= end)
		args = "";
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	/* A prelinked object moved its sections: the site and semaphore
	 * moved as .stapsdt.base did. */
	if (have_base) {
		pc += base_now - base;
		if (sem)
			sem += base_now - base;
	}
	s->offset = file_offset(elf, pc);
	s->semaphore = sem ? file_offset(elf, sem) : 0;
	if (!s->offset)
		return -1;
	for (const char *a = args; *a && s->nargs < USDT_MAX_ARGS;) {
		size_t l;

		while (*a == ' ')
			a++;
		l = strcspn(a, " ");
		if (!l)
			break;
		arg_translate(a, l, s->args[s->nargs], sizeof(s->args[0]));
		s->nargs++;
		a += l;
	}
	return 0;
}

int usdt_sites(int fd, const char *provider, struct usdt_site **out)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t base_now = 0;
	int have_base, n = 0, alloc = 0;
	struct usdt_site *v = NULL;

	*out = NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		return -1;
	}
	have_base = !section_addr(elf, ".stapsdt.base", &base_now);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			struct usdt_site s;

			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
			    memcmp((const char *)data->d_buf + noff, "stapsdt", 8))
				continue;
			if (note_site(elf, (const unsigned char *)data->d_buf + doff, nh.n_descsz, provider, base_now,
				      have_base, &s))
				continue;
			if (n == alloc) {
				struct usdt_site *p = realloc(v, (alloc = alloc ? alloc * 2 : 8) * sizeof(*p));

				if (!p)
					break;
				v = p;
			}
			v[n++] = s;
		}
	}
	elf_end(elf);
	*out = v;
	return n;
}
