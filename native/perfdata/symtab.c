/* Symbol tree with the textbook red-black insert and (successor-based) erase, the algorithms the
 * kernel's lib/rbtree implements, so the tree has perf's shape and symbols__find perf's answers. */
#include "symtab.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define N(i) (t->s[i])

static int32_t child_of(const symtab_t *t, int32_t p, int right)
{
    return right ? N(p).right : N(p).left;
}

static int is_red(const symtab_t *t, int32_t i)
{
    return i != SYM_NONE && N(i).red;
}

/* Put c where x was under x's parent. */
static void replace_child(symtab_t *t, int32_t x, int32_t c)
{
    int32_t p = N(x).parent;
    if (p == SYM_NONE)
        t->root = c;
    else if (N(p).left == x)
        N(p).left = c;
    else
        N(p).right = c;
    if (c != SYM_NONE)
        N(c).parent = p;
}

/* Rotate x down to the left (right = 0) or to the right (right = 1). */
static void rotate(symtab_t *t, int32_t x, int right)
{
    int32_t y = right ? N(x).left : N(x).right;
    int32_t mid = right ? N(y).right : N(y).left;
    if (right)
        N(x).left = mid;
    else
        N(x).right = mid;
    if (mid != SYM_NONE)
        N(mid).parent = x;
    replace_child(t, x, y);
    if (right)
        N(y).right = x;
    else
        N(y).left = x;
    N(x).parent = y;
}

static void insert_fixup(symtab_t *t, int32_t z)
{
    while (is_red(t, N(z).parent)) {
        int32_t p = N(z).parent, g = N(p).parent;
        int left = N(g).left == p;
        int32_t uncle = left ? N(g).right : N(g).left;
        if (is_red(t, uncle)) {
            N(p).red = N(uncle).red = 0;
            N(g).red = 1;
            z = g;
            continue;
        }
        if (z == (left ? N(p).right : N(p).left)) {
            z = p;
            rotate(t, z, !left);
            p = N(z).parent;
        }
        N(p).red = 0;
        N(g).red = 1;
        rotate(t, g, left);
    }
    N(t->root).red = 0;
}

static int names_add(symtab_t *t, const char *name, size_t len, uint64_t *off)
{
    if (t->names_len + len + 1 > t->names_cap) {
        size_t nc = t->names_cap ? t->names_cap : 1 << 16;
        while (nc < t->names_len + len + 1)
            nc *= 2;
        char *p = realloc(t->names, nc);
        if (!p)
            return -ENOMEM;
        t->names = p;
        t->names_cap = nc;
    }
    memcpy(t->names + t->names_len, name, len);
    t->names[t->names_len + len] = 0;
    *off = t->names_len;
    t->names_len += len + 1;
    return 0;
}

int symtab_insert(symtab_t *t, uint64_t start, uint64_t len, uint8_t binding, uint8_t type,
                  const char *name, size_t name_len)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        sym_t *s = realloc(t->s, nc * sizeof *s);
        if (!s)
            return -ENOMEM;
        t->s = s;
        t->cap = nc;
        if (!t->n)
            t->root = SYM_NONE;
    }
    int32_t z = (int32_t)t->n;
    sym_t *s = &t->s[t->n];
    memset(s, 0, sizeof *s);
    if (names_add(t, name, name_len, &s->name))
        return -ENOMEM;
    t->n++;
    *s = (sym_t){start, len ? start + len : start, s->name, (uint32_t)name_len, binding, type,
                 SYM_NONE, SYM_NONE, SYM_NONE, 1, 0};
    int32_t p = SYM_NONE, x = t->root;
    int right = 0;
    while (x != SYM_NONE) {
        p = x;
        right = !(start < N(x).start);
        x = child_of(t, x, right);
    }
    N(z).parent = p;
    if (p == SYM_NONE)
        t->root = z;
    else if (right)
        N(p).right = z;
    else
        N(p).left = z;
    insert_fixup(t, z);
    return 0;
}

int32_t symtab_first(const symtab_t *t)
{
    int32_t x = t->n ? t->root : SYM_NONE;
    while (x != SYM_NONE && N(x).left != SYM_NONE)
        x = N(x).left;
    return x;
}

int32_t symtab_next(const symtab_t *t, int32_t x)
{
    if (N(x).right != SYM_NONE) {
        x = N(x).right;
        while (N(x).left != SYM_NONE)
            x = N(x).left;
        return x;
    }
    int32_t p = N(x).parent;
    while (p != SYM_NONE && N(p).right == x)
        x = p, p = N(p).parent;
    return p;
}

/* Restore the black height after a black node left the `right` side of p. */
static void erase_fixup(symtab_t *t, int32_t x, int32_t p)
{
    while (x != t->root && !is_red(t, x) && p != SYM_NONE) {
        int left = N(p).right != x; /* as the kernel decides which side lost the black node */
        int32_t w = left ? N(p).right : N(p).left;
        if (is_red(t, w)) {
            N(w).red = 0;
            N(p).red = 1;
            rotate(t, p, !left);
            w = left ? N(p).right : N(p).left;
        }
        int32_t near = left ? N(w).left : N(w).right, far = left ? N(w).right : N(w).left;
        if (!is_red(t, near) && !is_red(t, far)) {
            N(w).red = 1;
            x = p;
            p = N(x).parent;
            continue;
        }
        if (!is_red(t, far)) {
            N(near).red = 0;
            N(w).red = 1;
            rotate(t, w, left);
            w = left ? N(p).right : N(p).left;
            far = left ? N(w).right : N(w).left;
        }
        N(w).red = N(p).red;
        N(p).red = 0;
        if (far != SYM_NONE)
            N(far).red = 0;
        rotate(t, p, !left);
        x = t->root;
        break;
    }
    if (x != SYM_NONE)
        N(x).red = 0;
}

void symtab_erase(symtab_t *t, int32_t z)
{
    int32_t x, xp;
    int removed_red;
    if (N(z).left == SYM_NONE || N(z).right == SYM_NONE) {
        x = N(z).left == SYM_NONE ? N(z).right : N(z).left;
        xp = N(z).parent;
        removed_red = N(z).red;
        replace_child(t, z, x);
    } else {
        int32_t y = N(z).right;
        while (N(y).left != SYM_NONE)
            y = N(y).left;
        removed_red = N(y).red;
        x = N(y).right;
        if (N(y).parent == z) {
            xp = y;
        } else {
            xp = N(y).parent;
            replace_child(t, y, x);
            N(y).right = N(z).right;
            N(N(y).right).parent = y;
        }
        replace_child(t, z, y);
        N(y).left = N(z).left;
        N(N(y).left).parent = y;
        N(y).red = N(z).red;
    }
    N(z).dead = 1;
    N(z).left = N(z).right = N(z).parent = SYM_NONE;
    if (!removed_red)
        erase_fixup(t, x, xp);
}

void symtab_fixup_end(symtab_t *t, int is_kallsyms)
{
    int32_t prev = SYM_NONE, cur = symtab_first(t);
    if (cur == SYM_NONE)
        return;
    for (int32_t nx = symtab_next(t, cur); nx != SYM_NONE; nx = symtab_next(t, nx)) {
        prev = cur;
        cur = nx;
        if (N(prev).end != N(prev).start)
            continue;
        if (is_kallsyms && !strchr(symtab_name(t, prev), '[') != !strchr(symtab_name(t, cur), '['))
            N(prev).end = ((N(prev).end + 4096) + 4095) / 4096 * 4096;
        else
            N(prev).end = N(cur).start;
    }
    if (N(cur).end == N(cur).start)
        N(cur).end = (N(cur).start + 4095) / 4096 * 4096 + 4096;
}

static size_t underscores(const char *s)
{
    size_t n = 0;
    while (s[n] == '_')
        n++;
    return n;
}

/* perf's choose_best_symbol: 1 when a should stay (ties keep a), 0 when b should. */
static int best_is_a(const symtab_t *t, int32_t a, int32_t b)
{
    int za = N(a).end == N(a).start, zb = N(b).end == N(b).start;
    if (zb && !za)
        return 1;
    if (za && !zb)
        return 0;
    int wa = N(a).binding == STB_WEAK, wb = N(b).binding == STB_WEAK;
    if (wa != wb)
        return wb;
    int ga = N(a).binding == STB_GLOBAL, gb = N(b).binding == STB_GLOBAL;
    if (ga != gb)
        return ga;
    size_t ua = underscores(symtab_name(t, a)), ub = underscores(symtab_name(t, b));
    if (ua != ub)
        return ub > ua;
    if (N(a).name_len != N(b).name_len)
        return N(a).name_len > N(b).name_len;
    return 1;
}

void symtab_fixup_duplicate(symtab_t *t)
{
    int32_t cur = symtab_first(t);
    while (cur != SYM_NONE) {
        int32_t nx = symtab_next(t, cur);
        if (nx == SYM_NONE)
            break;
        if (N(cur).start != N(nx).start) {
            cur = nx;
            continue;
        }
        if (best_is_a(t, cur, nx)) {
            symtab_erase(t, nx);
        } else {
            symtab_erase(t, cur);
            cur = nx;
        }
    }
}

int32_t symtab_find(const symtab_t *t, uint64_t ip)
{
    int32_t x = t->n ? t->root : SYM_NONE;
    while (x != SYM_NONE) {
        const sym_t *s = &N(x);
        if (ip < s->start)
            x = s->left;
        else if (ip > s->end || (ip == s->end && ip != s->start))
            x = s->right;
        else
            return x;
    }
    return SYM_NONE;
}

void symtab_free(symtab_t *t)
{
    free(t->s);
    free(t->names);
    memset(t, 0, sizeof *t);
}
