/* elfsym.h - symbols of ELF files as perf's symbol-elf.c reads them: the symbol sources, build-ids and
 * the JIT maps (elfsym.c). */
#ifndef PMUPROF_PD_ELFSYM_H
#define PMUPROF_PD_ELFSYM_H

#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "dso.h"

/* One candidate symbol source (perf's struct symsrc). */
typedef struct {
    char *path;
    int fd;
    void *mem; /* an in-memory image (the vdso), freed with the source */
    Elf *elf;
    GElf_Ehdr ehdr;
    Elf_Scn *symtab, *dynsym, *opd;
    GElf_Shdr symshdr, dynshdr;
    size_t dynsym_idx;
} symsrc_t;

/* The first GNU build-id note of an ELF: its size, or <= 0 (dso_build_id_equal in dso.h compares them). */
int elf_build_id(Elf *elf, uint8_t *out, size_t cap);
/* perf's symsrc__init: open PATH (or an in-memory image), reject a mismatching build-id. 0 or -1. */
int symsrc_open(symsrc_t *ss, dso_t *dso, const char *path, void *mem, size_t memlen);
void symsrc_close(symsrc_t *ss);
Elf_Scn *elf_section_named(Elf *elf, const GElf_Ehdr *eh, GElf_Shdr *sh, const char *name, size_t *idx);
/* perf's dso__load_sym (+ dso__synthesize_plt_symbols) for user DSOs. */
int elfsym_load(dso_t *dso, symsrc_t *syms, symsrc_t *runtime);
/* perf's dso__load_perf_map: JIT symbols from /tmp/perf-PID.map, when it is a regular file owned by root or
 * the euid and at most PERFMAP_MAX bytes (else -1 and dso->skipped says why). */
#define PERFMAP_MAX (64 << 20)
int perfmap_load(dso_t *dso, const char *path);

#endif
