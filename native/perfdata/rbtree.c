/* The red-black tree perf 6.1 keeps symbols in, rebuilt from the insert/erase log: the textbook insert
 * and successor-based erase (what the kernel's lib/rbtree implements), so the shape, and so the answer
 * of perf's symbols__find for overlapping symbols, is perf's. */
#include <stdlib.h>
#include <string.h>

#include "rbtree.h"

#define N(i) (t->rb[i])

static int is_red(const symtab_t *t, int32_t i)
{
    return i != SYM_NONE && N(i).red;
}

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

/* perf's __symbols__insert: equal keys go right. keys[] are the starts the symbols were inserted with. */
static void rb_insert(symtab_t *t, int32_t z, const uint64_t *keys)
{
    int32_t p = SYM_NONE, x = t->root;
    int right = 0;
    N(z) = (rbnode_t){SYM_NONE, SYM_NONE, SYM_NONE, 1};
    while (x != SYM_NONE) {
        p = x;
        right = !(keys[z] < keys[x]);
        x = right ? N(x).right : N(x).left;
    }
    N(z).parent = p;
    if (p == SYM_NONE)
        t->root = z;
    else if (right)
        N(p).right = z;
    else
        N(p).left = z;
    insert_fixup(t, z);
}

/* Restore the black height after a black node left p's side where x now is. */
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

static void rb_erase(symtab_t *t, int32_t z)
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
    N(z) = (rbnode_t){SYM_NONE, SYM_NONE, SYM_NONE, 0};
    if (!removed_red)
        erase_fixup(t, x, xp);
}

int rb_build(symtab_t *t)
{
    uint64_t *keys = malloc((t->n + 1) * sizeof *keys);
    rbnode_t *rb = realloc(t->rb, (t->n + 1) * sizeof *rb);
    if (!keys || !rb)
        return free(keys), free(rb), -1;
    t->rb = rb;
    t->root = SYM_NONE;
    for (size_t k = 0; k < t->nlog; k++) {
        int64_t op = t->log[k];
        if (op >= 0) {
            keys[op] = t->logkey[k];
            rb_insert(t, (int32_t)op, keys);
        } else {
            rb_erase(t, (int32_t)~op);
        }
    }
    free(keys);
    t->tree = 1;
    return 0;
}

int32_t rb_find(const symtab_t *t, uint64_t ip)
{
    int32_t x = t->root;
    while (x != SYM_NONE) {
        const sym_t *s = &t->s[x];
        if (ip < s->start)
            x = N(x).left;
        else if (ip > s->end || (ip == s->end && ip != s->start))
            x = N(x).right;
        else
            return x;
    }
    return SYM_NONE;
}
