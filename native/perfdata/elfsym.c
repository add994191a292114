/* ELF symbol loading as perf 6.1's symbol-elf.c does it: which symbols, how addresses are adjusted to
 * file offsets, demangling, the end/duplicate fix-ups after each table, and synthesized @plt symbols. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "lib/regfile.h"

#define NOTE_ALIGN(n) (((n) + 3u) & ~3u)

Elf_Scn *elf_section_named(Elf *elf, const GElf_Ehdr *eh, GElf_Shdr *sh, const char *name, size_t *idx)
{
    Elf_Scn *sec = NULL;
    size_t cnt = 1;
    if (!elf_rawdata(elf_getscn(elf, eh->e_shstrndx), NULL))
        return NULL;
    while ((sec = elf_nextscn(elf, sec)) != NULL) {
        gelf_getshdr(sec, sh);
        const char *s = elf_strptr(elf, eh->e_shstrndx, sh->sh_name);
        if (s && !strcmp(s, name)) {
            if (idx)
                *idx = cnt;
            return sec;
        }
        cnt++;
    }
    return NULL;
}

static int notes_build_id(Elf_Data *data, uint8_t *out, size_t cap)
{
    const unsigned char *p = data->d_buf, *end = p + data->d_size;
    while (p && end - p >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p, 4);
        memcpy(&descsz, p + 4, 4);
        memcpy(&type, p + 8, 4);
        const unsigned char *name = p + 12, *desc = name + NOTE_ALIGN(namesz);
        if (desc > end || NOTE_ALIGN(descsz) > (size_t)(end - desc))
            return -1;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(name, "GNU", 4)) {
            size_t sz = NOTE_ALIGN(descsz) < cap ? NOTE_ALIGN(descsz) : cap;
            memset(out, 0, cap);
            memcpy(out, desc, sz);
            return (int)NOTE_ALIGN(descsz);
        }
        p = desc + NOTE_ALIGN(descsz);
    }
    return -1;
}

int elf_build_id(Elf *elf, uint8_t *out, size_t cap)
{
    GElf_Ehdr eh;
    GElf_Shdr sh;
    if (!gelf_getehdr(elf, &eh))
        return -1;
    const char *names[] = {".note.gnu.build-id", ".notes", ".note"};
    for (size_t i = 0; i < 3; i++) {
        Elf_Scn *sec = elf_section_named(elf, &eh, &sh, names[i], NULL);
        if (!sec)
            continue;
        Elf_Data *data = elf_getdata(sec, NULL);
        return data ? notes_build_id(data, out, cap) : -1;
    }
    return -1;
}

static void find_tables(symsrc_t *ss)
{
    ss->symtab = elf_section_named(ss->elf, &ss->ehdr, &ss->symshdr, ".symtab", NULL);
    if (ss->symshdr.sh_type != SHT_SYMTAB)
        ss->symtab = NULL;
    ss->dynsym_idx = 0;
    ss->dynsym = elf_section_named(ss->elf, &ss->ehdr, &ss->dynshdr, ".dynsym", &ss->dynsym_idx);
    if (ss->dynshdr.sh_type != SHT_DYNSYM)
        ss->dynsym = NULL;
    GElf_Shdr opd;
    ss->opd = elf_section_named(ss->elf, &ss->ehdr, &opd, ".opd", NULL);
    if (opd.sh_type != SHT_PROGBITS)
        ss->opd = NULL;
}

int symsrc_open(symsrc_t *ss, dso_t *dso, const char *path, void *mem, size_t memlen)
{
    memset(ss, 0, sizeof *ss);
    ss->fd = -1;
    if (mem) {
        ss->mem = mem;
        ss->elf = elf_memory(mem, memlen);
    } else {
        ss->fd = regfile_open(path); /* candidates were checked regular, but a file can be swapped meanwhile */
        if (ss->fd < 0)
            return ss->fd = -1, -1;
        ss->elf = elf_begin(ss->fd, ELF_C_READ_MMAP, NULL);
    }
    uint8_t bid[20];
    if (!ss->elf || !gelf_getehdr(ss->elf, &ss->ehdr) ||
        (ss->ehdr.e_ident[EI_DATA] != ELFDATA2LSB && ss->ehdr.e_ident[EI_DATA] != ELFDATA2MSB))
        goto fail;
    if (dso->has_bid && !dso_build_id_equal(dso, bid, elf_build_id(ss->elf, bid, sizeof bid))) {
        dso->bid_mismatch = 1;
        goto fail;
    }
    find_tables(ss);
    ss->path = path ? strdup(path) : NULL;
    return 0;
fail:
    ss->mem = NULL; /* the caller still owns it */
    symsrc_close(ss);
    return -1;
}

void symsrc_close(symsrc_t *ss)
{
    if (ss->elf)
        elf_end(ss->elf);
    if (ss->fd >= 0)
        close(ss->fd);
    free(ss->mem);
    free(ss->path);
    memset(ss, 0, sizeof *ss);
    ss->fd = -1;
}

/* perf's elf_read_program_header: the PT_LOAD holding vaddr. */
static int load_phdr(Elf *elf, uint64_t vaddr, GElf_Phdr *ph)
{
    size_t n;
    if (elf_getphdrnum(elf, &n))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!gelf_getphdr(elf, (int)i, ph))
            return -1;
        uint64_t sz = ph->p_memsz > ph->p_filesz ? ph->p_memsz : ph->p_filesz;
        if (ph->p_type == PT_LOAD && sz && vaddr >= ph->p_vaddr && vaddr < ph->p_vaddr + sz)
            return 0;
    }
    return -1;
}

static const char *sec_name(Elf *elf, const GElf_Ehdr *eh, const GElf_Shdr *sh)
{
    const char *s = elf_strptr(elf, eh->e_shstrndx, sh->sh_name);
    return s ? s : "";
}

typedef struct {
    dso_t *dso;
    symsrc_t *syms, *run;
    Elf_Data *data, *strs;
} pass_t;

static int want_symbol(const GElf_Sym *s)
{
    int type = GELF_ST_TYPE(s->st_info);
    if (!s->st_name || s->st_shndx == SHN_UNDEF)
        return 0;
    return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_OBJECT;
}

static int is_label(const GElf_Sym *s)
{
    int vis = GELF_ST_VISIBILITY(s->st_other);
    return GELF_ST_TYPE(s->st_info) == STT_NOTYPE && s->st_name && s->st_shndx != SHN_UNDEF && s->st_shndx != SHN_ABS &&
            vis != STV_HIDDEN && vis != STV_INTERNAL;
}

/* One symbol: 1 added, 0 skipped, -1 perf would abort the table here. */
static int pass_symbol(pass_t *p, GElf_Sym *s)
{
    int label = is_label(s);
    GElf_Shdr sh;
    if ((!label && !want_symbol(s)) || s->st_shndx == SHN_ABS)
        return 0;
    Elf *elf = p->syms->elf;
    const GElf_Ehdr *eh = &p->syms->ehdr;
    Elf_Scn *sec = elf_getscn(elf, s->st_shndx);
    if (!sec || !gelf_getshdr(sec, &sh))
        return -1;
    if (!(sh.sh_flags & SHF_ALLOC))
        return 0;
    if (sh.sh_type == SHT_NOBITS) { /* a debug-only file: use the running binary's section */
        elf = p->run->elf, eh = &p->run->ehdr;
        if (!(sec = elf_getscn(elf, s->st_shndx)) || !gelf_getshdr(sec, &sh))
            return -1;
    }
    const char *sn = sec_name(elf, eh, &sh);
    if (label && !strstr(sn, "text") && !strstr(sn, "data"))
        return 0;
    GElf_Phdr ph;
    uint64_t value = s->st_value;
    if (load_phdr(p->run->elf, value, &ph))
        value -= sh.sh_addr - sh.sh_offset;
    else
        value -= ph.p_vaddr - ph.p_offset;
    const char *name = (const char *)p->strs->d_buf + s->st_name;
    if (s->st_name >= p->strs->d_size)
        name = "";
    int rc = symtab_insert(&p->dso->syms, value, s->st_size, GELF_ST_BIND(s->st_info), GELF_ST_TYPE(s->st_info), name,
                           strlen(name), SYMNAME_DEMANGLE);
    return rc ? -ENOMEM : 1;
}

/* perf's dso__load_sym_internal for one table (the .symtab, or the .dynsym). */
static int load_table(dso_t *dso, symsrc_t *syms, symsrc_t *run, int dynsym)
{
    pass_t p = {dso, syms, run, NULL, NULL};
    GElf_Shdr sh = dynsym ? syms->dynshdr : syms->symshdr;
    Elf_Scn *sec = dynsym ? syms->dynsym : syms->symtab, *strsec;
    if (!(p.data = elf_getdata(sec, NULL)) || !(strsec = elf_getscn(syms->elf, sh.sh_link)) ||
        !(p.strs = elf_getdata(strsec, NULL)) || !elf_getdata(elf_getscn(run->elf, run->ehdr.e_shstrndx), NULL) ||
        !elf_getdata(elf_getscn(syms->elf, syms->ehdr.e_shstrndx), NULL) || !sh.sh_entsize)
        return -1;
    size_t nsyms = sh.sh_size / sh.sh_entsize;
    int nr = 0;
    for (size_t i = 0; i < nsyms; i++) {
        GElf_Sym s;
        if (!gelf_getsym(p.data, (int)i, &s))
            memset(&s, 0, sizeof s);
        int rc = pass_symbol(&p, &s);
        if (rc < 0)
            return rc;
        nr += rc;
    }
    if (nr > 0) {
        symtab_fixup_end(&dso->syms, 0);
        symtab_fixup_duplicate(&dso->syms);
    }
    return nr;
}

/* perf 6.1's dso__synthesize_plt_symbols: one 'name@plt' per .rela.plt entry, .plt's entry size apart. */
static int plt_symbols(dso_t *dso, symsrc_t *ss)
{
    GElf_Shdr rel, plt, dyn = ss->dynshdr;
    Elf *elf = ss->elf;
    Elf_Scn *rsec = elf_section_named(elf, &ss->ehdr, &rel, ".rela.plt", NULL);
    if (!ss->dynsym || (!rsec && !(rsec = elf_section_named(elf, &ss->ehdr, &rel, ".rel.plt", NULL))))
        return 0;
    Elf_Data *rdata, *syms, *strs;
    Elf_Scn *strsec;
    if (rel.sh_link != ss->dynsym_idx || !elf_section_named(elf, &ss->ehdr, &plt, ".plt", NULL) ||
        !(rdata = elf_getdata(rsec, NULL)) || !(syms = elf_getdata(ss->dynsym, NULL)) ||
        !(strsec = elf_getscn(elf, dyn.sh_link)) || !(strs = elf_getdata(strsec, NULL)) || !strs->d_size ||
        !rel.sh_entsize || (rel.sh_type != SHT_RELA && rel.sh_type != SHT_REL))
        return 0;
    uint64_t off = plt.sh_offset + plt.sh_entsize, each = plt.sh_entsize;
    size_t nrel = rel.sh_size / rel.sh_entsize;
    GElf_Sym sym = {0};
    for (size_t i = 0; i < nrel; i++) {
        GElf_Rela ra;
        GElf_Rel r;
        uint64_t info = 0;
        if (rel.sh_type == SHT_RELA && gelf_getrela(rdata, (int)i, &ra))
            info = ra.r_info;
        else if (rel.sh_type == SHT_REL && gelf_getrel(rdata, (int)i, &r))
            info = r.r_info;
        gelf_getsym(syms, (int)GELF_R_SYM(info), &sym); /* on failure perf keeps the previous one */
        const char *raw = sym.st_name < strs->d_size ? (const char *)strs->d_buf + sym.st_name : "";
        if (symtab_insert(&dso->syms, off, each, STB_GLOBAL, STT_FUNC, raw, strlen(raw), SYMNAME_PLT))
            return -ENOMEM;
        off += each;
    }
    return (int)nrel;
}

int elfsym_load(dso_t *dso, symsrc_t *syms, symsrc_t *run)
{
    int nr = 0, rc;
    if (syms->symtab) {
        if ((rc = load_table(dso, syms, run, 0)) < 0)
            return rc;
        nr = rc;
    }
    if (syms->dynsym) {
        if ((rc = load_table(dso, syms, run, 1)) < 0)
            return rc;
        nr += rc;
    }
    if (nr > 0) {
        rc = plt_symbols(dso, run);
        if (rc < 0)
            return rc;
        nr += rc;
    }
    return nr;
}

/* A perf map is written by whoever runs the JIT, in a world-writable /tmp: opened without following a link
 * or blocking on a FIFO, used only when it is a regular file owned by root or by us (perf's rule for perf
 * maps, which runs as root: root's files only) of at most PERFMAP_MAX bytes, and read whole up to the size
 * fstat gave (a file growing meanwhile cannot make it read more). NULL with dso->skipped saying why
 * (nothing said when the file is absent: unnamed JIT code is common). */
static char *perfmap_read(dso_t *dso, const char *path, size_t *len)
{
    struct stat st;
    char *text = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        dso->skipped = errno == ELOOP ? "a symbolic link" : errno != ENOENT ? "cannot be opened" : NULL;
        return NULL;
    }
    if (fstat(fd, &st))
        dso->skipped = "cannot be read";
    else if (!S_ISREG(st.st_mode))
        dso->skipped = "not a regular file";
    else if (st.st_uid != 0 && st.st_uid != geteuid())
        dso->skipped = "not owned by root or the current user";
    else if (st.st_size > PERFMAP_MAX)
        dso->skipped = "larger than 64 MiB";
    else if (!(text = malloc((size_t)st.st_size + 1)))
        dso->skipped = "out of memory";
    *len = 0;
    while (text && *len < (size_t)st.st_size) {
        ssize_t n = read(fd, text + *len, (size_t)st.st_size - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* shrank meanwhile: what was there */
        *len += (size_t)n;
    }
    close(fd);
    return text;
}

int perfmap_load(dso_t *dso, const char *path)
{
    size_t textlen;
    char *text = perfmap_read(dso, path, &textlen), *line = NULL;
    FILE *fp = text && textlen ? fmemopen(text, textlen, "r") : NULL;
    size_t cap = 0;
    ssize_t len;
    int nr = 0;
    if (!fp) {
        free(text);
        return text ? 0 : -1;
    }
    while ((len = getline(&line, &cap, fp)) >= 0) {
        char *end;
        if (len > 0) /* perf drops the last character, newline or not */
            line[--len] = 0;
        uint64_t start = strtoull(line, &end, 16);
        size_t at = (size_t)(end - line) + 1;
        if (at + 2 >= (size_t)len)
            continue;
        uint64_t size = strtoull(line + at, &end, 16);
        at = (size_t)(end - line) + 1;
        if (at + 2 >= (size_t)len)
            continue;
        if (symtab_insert(&dso->syms, start, size, STB_GLOBAL, STT_FUNC, line + at, strlen(line + at), SYMNAME_RAW))
            break;
        nr++;
    }
    free(line);
    fclose(fp);
    free(text);
    return nr;
}
