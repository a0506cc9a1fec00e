/*
 * formats/elfcut.c: cutting an ELF object down; see elfcut.h.
 */
#include "elfcut.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What unwinding and the symbol tables read, and what names a call
 * through the PLT: its entries and the relocations of their slots. */
static const char *const keep_minimal[] = { ".eh_frame", ".eh_frame_hdr", ".debug_frame", ".symtab", ".strtab",
					    ".dynsym", ".dynstr", ".gnu_debugdata", ".shstrtab", ".plt",
					    ".plt.sec", ".plt.got", ".rela.plt", ".rela.dyn", NULL };

/* What names inlined functions and gives source lines: the DIE tree and
 * what it refers to, the line tables, the address lookups; not variable
 * locations or macros. And .debug_frame: the only CFI of code built
 * without unwind tables, once its object is stripped. */
static const char *const keep_debug[] = { ".debug_info", ".debug_abbrev", ".debug_str", ".debug_line",
					  ".debug_line_str", ".debug_ranges", ".debug_rnglists", ".debug_aranges",
					  ".debug_addr", ".debug_str_offsets", ".debug_frame", ".symtab", ".strtab",
					  ".shstrtab", NULL };

const char *const *elfcut_sections(enum elfcut_keep keep)
{
	return keep == ELFCUT_DEBUG ? keep_debug : keep_minimal;
}

static int kept(const char *name, const GElf_Shdr *sh, const char *const *keep)
{
	if (sh->sh_type == SHT_NOTE)
		return 1;
	for (int i = 0; keep[i]; i++)
		if (!strcmp(name, keep[i]))
			return 1;
	return 0;
}

int elfcut_write(Elf *in, enum elfcut_keep keep, int fd)
{
	const char *const *list = elfcut_sections(keep);
	size_t nph, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *o = elf_begin(fd, ELF_C_WRITE, NULL);
	int ret = -1;

	if (!o || !gelf_getehdr(in, &eh) || elf_getphdrnum(in, &nph) || elf_getshdrstrndx(in, &shstrndx) ||
	    !gelf_newehdr(o, gelf_getclass(in)))
		goto out;
	if (nph && !gelf_newphdr(o, nph))
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		/* The offsets stay those of the original file: the analyzer
		 * maps runtime addresses through them. */
		if (!gelf_getphdr(in, i, &ph) || !gelf_update_phdr(o, i, &ph))
			goto out;
	}
	while ((scn = elf_nextscn(in, scn))) {
		Elf_Scn *ns = elf_newscn(o);
		Elf_Data *d, *nd;
		GElf_Shdr sh;
		const char *name;

		if (!ns || !gelf_getshdr(scn, &sh))
			goto out;
		name = elf_strptr(in, shstrndx, sh.sh_name);
		nd = elf_newdata(ns);
		if (!nd)
			goto out;
		if (sh.sh_type != SHT_NOBITS && name && kept(name, &sh, list) &&
		    (!(sh.sh_flags & SHF_COMPRESSED) || elf_compress(scn, 0, 0) == 1) && gelf_getshdr(scn, &sh) &&
		    (d = elf_getdata(scn, NULL))) {
			*nd = *d;
		} else {
			sh.sh_type = SHT_NOBITS;
			sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
			nd->d_buf = NULL;
			nd->d_size = sh.sh_size;
			nd->d_type = ELF_T_BYTE;
			nd->d_align = sh.sh_addralign ? sh.sh_addralign : 1;
		}
		if (!gelf_update_shdr(ns, &sh))
			goto out;
	}
	eh.e_phoff = 0;
	eh.e_shoff = 0;
	if (gelf_update_ehdr(o, &eh) && elf_update(o, ELF_C_WRITE) >= 0)
		ret = 0;
out:
	if (o)
		elf_end(o);
	return ret;
}

int elfcut_debug_compressed(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), found = 0;
	struct stat st;
	Elf *elf = fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getshdrstrndx(elf, &shstrndx))
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
			    !strcmp(name, ".debug_info"))
				found = sh.sh_type != SHT_NOBITS && (sh.sh_flags & SHF_COMPRESSED);
		}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return found;
}
