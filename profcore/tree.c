/*
 * tree.c - the call tree both tools build: one node per (parent,
 * function, inlined, line), found through an open-addressing index.
 */
#include "profcore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static uint64_t node_key(int parent, int func, int inlined, int line)
{
    uint64_t key =
        ((uint64_t)(uint32_t)parent << 32) | (uint32_t)func | ((uint64_t)(inlined != 0) << 31);
    return pa__hash_pair(key, (uint32_t)line);
}

static uint64_t node_key_at(const void *user, size_t i)
{
    const pc_tree_node *n = &((const pc_tree_build *)user)->nodes[i];
    return node_key(n->parent, n->func, n->inlined, n->line);
}

int pc_tree_child(pc_tree_build *b, int parent, int func, int inlined, int line)
{
    if (pa__index_reserve(&b->hash, &b->hcap, b->hint ? b->hint : 4096, 0, b->n, node_key_at, b) <
        0)
        return -ENOMEM;
    inlined = inlined != 0 && parent >= 0;
    size_t q = node_key(parent, func, inlined, line) & (b->hcap - 1);
    while (b->hash[q]) {
        pc_tree_node *n = &b->nodes[b->hash[q] - 1];
        if (n->parent == parent && n->func == func && n->inlined == inlined && n->line == line)
            return b->hash[q] - 1;
        q = (q + 1) & (b->hcap - 1);
    }
    if (PA__GROW(b->nodes, b->cap, b->n + 1, b->node_hint ? b->node_hint : 256) < 0)
        return -ENOMEM;
    int idx = (int)b->n++;
    pc_tree_node *n = &b->nodes[idx];
    memset(n, 0, sizeof(*n));
    n->func = func;
    n->parent = parent;
    n->inlined = (unsigned char)inlined;
    n->line = line;
    n->first_child = -1;
    n->next_sibling = -1;
    if (parent >= 0) {
        n->next_sibling = b->nodes[parent].first_child;
        b->nodes[parent].first_child = idx;
    }
    b->hash[q] = idx + 1;
    return idx;
}

int pc_tree_stack(pc_tree_build *b, const int *ids, const int *inlined, const int *lines, int n)
{
    int node = -1;
    for (int i = n - 1; i >= 0; i--) {
        int c = pc_tree_child(b, node, ids[i], inlined ? inlined[i] : 0, lines ? lines[i] : 0);
        if (c < 0)
            return c;
        node = c;
    }
    return node;
}

void pc_tree_build_free(pc_tree_build *b)
{
    free(b->nodes);
    free(b->hash);
    b->nodes = NULL;
    b->hash = NULL;
    b->n = b->cap = b->hcap = 0;
}

size_t pc_tree_build_memory(const pc_tree_build *b)
{
    return b->cap * sizeof(pc_tree_node) + b->hcap * sizeof(int);
}
