/* tracetool._speedups: an optional accelerator for directory-mode `stats` (issue 18).
 *
 * `nested_sums(raw, max_depth, unset, chains=None, namer=None, strict=False)` reads a recording's
 * bytes that a strict parser (orjson, for the index) has already accepted, or with `strict`
 * validates them as simdjson would in the same pass (see "strict validation"), and computes what
 * `tracetool.stats._collect._nested_sums` computes on its `EventHead`s, without building the
 * events: it walks the top-level object, scans each event for the fields `EventHead` holds,
 * pairs calls with returns per thread and sums per call key in event order. It returns None
 * whenever anything is not the plain common case (eventUpdates, a non-object event, a duplicate
 * field, a float or container where an id or a key is read, an integer beyond 64 bits, a lone
 * surrogate, nesting deeper than `max_depth`, calls that do not nest plainly...): the caller
 * then runs the pure-Python path, which gives the canonical answer.
 *
 * Why hand-written C (DESIGN.md prefers well-kept libraries): msgspec, orjson and simdjson were
 * measured on the 300 MB benchmark directory. msgspec decoding the `EventHead`s (0.68 s) plus the
 * byte pre-check its unchecked skipping needs (0.38 s) plus the pairing loop in Python (0.8 s)
 * dominate `stats`; simdjson validates the same bytes in 0.23 s but its Python proxies cost more
 * than msgspec to read fields from, and no library fuses validation-free field extraction with
 * the pairing pass. The validation first stayed with simdjson (a pass of its own, ~0.23 s);
 * done here in the scan's pass (`strict`) it costs ~0.05 s more than the scan alone.
 *
 * The result is (sums, others, classmap_span): sums is `_nested_sums`'s dict, raw key -> [calls,
 * seconds, (start, end) of the text of the key's first call], in the order the keys' first calls
 * returned. A function call's key is (defined_class, method_id, path, lineno, static), `unset`
 * for a missing field; a SQL call's ("\0sql", sql, database_type). Any other call (HTTP, no
 * method_id) is keyed by Python from its event (`_collect._other_key`): here its key is a
 * placeholder (`others` lists them, in order), bytes that tell the values its key and name are
 * made of (an HTTP call's start with `S` or `C` and are made of its request only). Calls
 * are grouped here by the exact values their key is made of, so two groups may be one key in
 * Python (`true` and `1` are equal there): that declines (None), as a collision found by the
 * caller does. classmap_span is (start, end) of the classMap value, or None without one.
 * A function call's entry holds a fourth item: the classMap chain that names it
 * (`tracetool.stats._names`, `RecordingNames.plain_function`), or None when Python names it;
 * `chains`, a dict the caller keeps, makes the same chain the same object from one recording to
 * the next; with `namer` (which `chains` then holds the results of) the item is
 * `namer(chain)`, the function's name, called once per chain.
 *
 * Speed (300 MB benchmark directory, one process: ~0.3 s of walking, ~0.1 s of results): what
 * is not read is skipped by its structure alone, containers 64 bytes at a time (an SSE2 mask of
 * the quotes, backslashes, braces and brackets, the bits then walked one by one), strings 16 at
 * a time; rising integer call ids need no table; a group's Python key is made once per process
 * (`cached_key`). Without SSE2 the same loops run a byte (or a word) at a time.
 *
 * Beside it, for the Python loops around it: `add_named` adds a recording's named sums to a
 * stats batch (`OverheadPartial.add_named`); for `inspect`, `tree_links` and `trees_holding`
 * nest dict events as `tracetool.trace.tree.tree_links` does, `tree_walk` walks or releases
 * their call trees as `preorder` and `release` do (nodes' slots set through their descriptors;
 * `_speedups_diagram.c`'s `call_tree` builds them), and `screen_calls` is
 * `Matcher.screen` of a function (their own sections below). Each has its Python original,
 * run where the accelerator is not built, and a differential test (tests/stats/test_speedups.py).
 *
 * Memory safety: every read is bounds-checked against the buffer length, on any bytes, even
 * though only validated input is passed. Stable, documented C API only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* (x86-64 always has it; elsewhere the word-at-a-time loops run) */
#endif

#define BAIL (-1)
#define NOMEM (-2)

/* ------------------------------------------------------------------ buffers and tables */

typedef struct {
    unsigned char *p;
    size_t len, cap;
} Buf;

/* A Buf used as a stack of (a, b) pairs of strong references: pop one; release the rest. */
static void
pop_pair(Buf *stack, PyObject *pair[2])
{
    stack->len -= 2 * sizeof(PyObject *);
    memcpy(pair, stack->p + stack->len, 2 * sizeof(PyObject *));
}

static void
free_pairs(Buf *stack)
{
    PyObject *pair[2];
    while (stack->len > 0) {
        pop_pair(stack, pair);
        Py_DECREF(pair[0]);
        Py_DECREF(pair[1]);
    }
    PyMem_Free(stack->p);
    stack->p = NULL;
    stack->cap = 0;
}

static int
buf_reserve(Buf *b, size_t extra)
{
    if (extra > ((size_t)1 << 40) || b->len > ((size_t)1 << 40)) {
        return NOMEM;
    }
    if (b->len + extra <= b->cap) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) {
        cap *= 2;
    }
    unsigned char *p = (unsigned char *)PyMem_Realloc(b->p, cap);
    if (p == NULL) {
        return NOMEM;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int
buf_put(Buf *b, const void *data, size_t n)
{
    int rc = buf_reserve(b, n);
    if (rc < 0) {
        return rc;
    }
    if (n) {
        memcpy(b->p + b->len, data, n);
    }
    b->len += n;
    return 0;
}

/* byte strings (stored in an arena) -> Py_ssize_t, open addressing */
typedef struct {
    uint64_t hash;
    size_t off, len;
    Py_ssize_t value;
    int used;
} Slot;

typedef struct {
    Slot *slots;
    size_t cap, count;
    Buf arena;
} Table;

static uint64_t
hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

static void
table_free(Table *t)
{
    PyMem_Free(t->slots);
    PyMem_Free(t->arena.p);
    memset(t, 0, sizeof(*t));
}

static int
table_grow(Table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    if (cap > ((size_t)1 << 40) / sizeof(Slot)) {
        return NOMEM;
    }
    Slot *slots = (Slot *)PyMem_Calloc(cap, sizeof(Slot));
    if (slots == NULL) {
        return NOMEM;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].used) {
            size_t j = (size_t)t->slots[i].hash & (cap - 1);
            while (slots[j].used) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = t->slots[i];
        }
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* The slot of key (found, or new with `value` stored when `insert`: *rc is then 1); NULL when
 * absent and not inserted, or on NOMEM (*rc set). */
static Slot *
table_get(Table *t, const unsigned char *key, size_t n, int insert, Py_ssize_t value, int *rc)
{
    *rc = 0;
    if ((t->count + 1) * 2 > t->cap) {
        if ((*rc = table_grow(t)) < 0) {
            return NULL;
        }
    }
    uint64_t h = hash_bytes(key, n);
    size_t j = (size_t)h & (t->cap - 1);
    while (t->slots[j].used) {
        Slot *s = &t->slots[j];
        if (s->hash == h && s->len == n && memcmp(t->arena.p + s->off, key, n) == 0) {
            return s;
        }
        j = (j + 1) & (t->cap - 1);
    }
    if (!insert) {
        return NULL;
    }
    size_t off = t->arena.len;
    if ((*rc = buf_put(&t->arena, key, n)) < 0) {
        return NULL;
    }
    Slot *s = &t->slots[j];
    s->used = 1;
    s->hash = h;
    s->off = off;
    s->len = n;
    s->value = value;
    t->count++;
    *rc = 1;
    return s;
}

/* ------------------------------------------------------------------ scanning */

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
    long max_depth;
    int strict; /* validate as JSON too (see "strict validation" below) */
} Src;

/* A value's text: [start, end), its first byte's kind ('s' string, '0' number, 't', 'f',
 * 'n' null, '{', '['), 0 when the field is missing; `esc` when a string holds a backslash. */
typedef struct {
    Py_ssize_t start, end;
    char type;
    char esc;
} Tok;

static inline Py_ssize_t
skip_ws(const Src *src, Py_ssize_t pos)
{
    while (pos < src->n) {
        unsigned char c = src->s[pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            break;
        }
        pos++;
    }
    return pos;
}

/* Whether a word holds a byte equal to b (b repeated in each byte of `ones`). */
#define HAS_BYTE(w, b) ((((w) ^ (b)) - 0x0101010101010101ULL) & ~((w) ^ (b)) & 0x8080808080808080ULL)

static Py_ssize_t scan_string_strict(const Src *src, Py_ssize_t pos, char *esc);

/* pos at an opening quote: the position after the closing one, or BAIL. */
static inline Py_ssize_t
scan_string(const Src *src, Py_ssize_t pos, char *esc)
{
    if (src->strict) {
        return scan_string_strict(src, pos, esc);
    }
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n;
    pos++;
    for (;;) {
#if defined(__SSE2__)
        /* sixteen bytes at a time up to the first quote or backslash */
        while (pos + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + pos));
            int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                   _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
            if (m != 0) {
                pos += __builtin_ctz((unsigned int)m);
                break;
            }
            pos += 16;
        }
#endif
        /* eight bytes at a time up to the first quote or backslash */
        while (pos + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + pos, 8);
            if (HAS_BYTE(w, 0x2222222222222222ULL) | HAS_BYTE(w, 0x5C5C5C5C5C5C5C5CULL)) {
                break;
            }
            pos += 8;
        }
        while (pos < n && s[pos] != '"' && s[pos] != '\\') {
            pos++;
        }
        if (pos >= n) {
            return BAIL;
        }
        if (s[pos] == '"') {
            return pos + 1;
        }
        *esc = 1;
        pos += 2; /* (whatever follows is escaped) */
    }
}

/* `scan_string` of a text already checked as JSON (prune's events: no strict mode): s[pos] is
 * a quote, the position after the closing one (*esc set when a backslash is met), or BAIL.
 * 16 bytes at a time (the last ones padded). */
static inline Py_ssize_t
pr_string(const unsigned char *s, Py_ssize_t n, Py_ssize_t pos, char *esc)
{
    pos++;
    while (pos < n) {
#if defined(__SSE2__)
        unsigned char pad[16];
        const unsigned char *p = s + pos;
        if (n - pos < 16) {
            memset(pad, 'a', sizeof(pad));
            memcpy(pad, p, (size_t)(n - pos));
            p = pad;
        }
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
        if (m == 0) {
            pos += 16;
            continue;
        }
        pos += __builtin_ctz((unsigned int)m);
#else
        if (s[pos] != '"' && s[pos] != '\\') {
            pos++;
            continue;
        }
#endif
        if (pos >= n) {
            break;
        }
        if (s[pos] == '"') {
            return pos + 1;
        }
        *esc = 1;
        pos += 2; /* (whatever follows is escaped) */
    }
    return BAIL;
}

static inline int
is_number_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* The bytes of a 64-byte block at p that may change the state of `skip_container`: a bit per
 * quote, backslash, brace or bracket ('[' | 0x20 is '{', ']' | 0x20 is '}', and no other byte
 * is). */
#if defined(__SSE2__)
static inline uint64_t
block_mask(const unsigned char *p)
{
    uint64_t mask = 0;
    for (int i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
        __m128i hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                         _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
            _mm_or_si128(_mm_cmpeq_epi8(lower, _mm_set1_epi8('{')),
                         _mm_cmpeq_epi8(lower, _mm_set1_epi8('}'))));
        mask |= (uint64_t)(unsigned int)_mm_movemask_epi8(hit) << (16 * i);
    }
    return mask;
}
#endif

/* Skip the object or array at pos (its opening byte), nested at `depth`: the position after
 * it, or BAIL (unclosed, or nested past max_depth). Strings are skipped whole: a backslash in
 * one escapes the byte after it; a backslash outside a string is no structure (passed over).
 * The bytes are read 64 at a time where 64 remain, only the structural ones one by one. */
static Py_ssize_t
skip_container(const Src *src, Py_ssize_t pos, long depth)
{
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n;
    long level = 0;
    int in_string = 0;
    Py_ssize_t escaped = -1; /* the byte a backslash in a string escapes */
    Py_ssize_t at = pos;
#define CONTAINER_STEP(i)                                                                         \
    do {                                                                                          \
        unsigned char c_ = s[(i)];                                                                \
        if (in_string) {                                                                          \
            if ((i) == escaped) {                                                                 \
                break;                                                                            \
            }                                                                                     \
            if (c_ == '\\') {                                                                      \
                escaped = (i) + 1;                                                                \
            }                                                                                     \
            else if (c_ == '"') {                                                                 \
                in_string = 0;                                                                    \
            }                                                                                     \
        }                                                                                         \
        else if (c_ == '"') {                                                                     \
            in_string = 1;                                                                        \
        }                                                                                         \
        else if (c_ == '{' || c_ == '[') {                                                        \
            level++;                                                                              \
            if (depth + level - 1 > src->max_depth) {                                             \
                return BAIL;                                                                      \
            }                                                                                     \
        }                                                                                         \
        else if (c_ == '}' || c_ == ']') {                                                        \
            if (--level == 0) {                                                                   \
                return (i) + 1;                                                                   \
            }                                                                                     \
        }                                                                                         \
    } while (0)
#if defined(__SSE2__)
    while (n - at >= 64) {
        uint64_t mask = block_mask(s + at);
        while (mask != 0) {
            Py_ssize_t i = at + __builtin_ctzll(mask);
            mask &= mask - 1;
            CONTAINER_STEP(i);
        }
        at += 64;
    }
#endif
    for (; at < n; at++) {
        CONTAINER_STEP(at);
    }
#undef CONTAINER_STEP
    return BAIL;
}

static Py_ssize_t check_number(const Src *src, Py_ssize_t pos);
static Py_ssize_t check_container(const Src *src, Py_ssize_t pos, long depth);

/* Skip the value at pos (no whitespace before it), nested at `depth` if a container: the
 * position after it, or BAIL. */
static Py_ssize_t
skip_value(const Src *src, Py_ssize_t pos, long depth, Tok *tok)
{
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n;
    if (pos >= n) {
        return BAIL;
    }
    unsigned char c = s[pos];
    tok->start = pos;
    tok->esc = 0;
    if (c == '"') {
        tok->type = 's';
        return tok->end = scan_string(src, pos, &tok->esc);
    }
    if (c == 't' || c == 'f' || c == 'n') {
        const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
        Py_ssize_t len = (Py_ssize_t)strlen(word);
        if (n - pos < len || memcmp(s + pos, word, (size_t)len) != 0) {
            return BAIL;
        }
        tok->type = (char)c;
        return tok->end = pos + len;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        Py_ssize_t at = pos;
        if (src->strict) {
            at = check_number(src, pos);
            if (at < 0) {
                return BAIL;
            }
        }
        else {
            while (at < n && is_number_byte(s[at])) {
                at++;
            }
        }
        tok->type = '0';
        return tok->end = at;
    }
    if (c != '{' && c != '[') {
        return BAIL;
    }
    tok->type = (char)c;
    if (depth > src->max_depth) {
        return BAIL;
    }
    Py_ssize_t after = src->strict ? check_container(src, pos, depth)
                                   : skip_container(src, pos, depth);
    return after < 0 ? BAIL : (tok->end = after);
}

static int
hex4(const unsigned char *p, unsigned int *out)
{
    unsigned int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= (unsigned int)(c - '0');
        }
        else if (c >= 'a' && c <= 'f') {
            v |= (unsigned int)(c - 'a' + 10);
        }
        else if (c >= 'A' && c <= 'F') {
            v |= (unsigned int)(c - 'A' + 10);
        }
        else {
            return BAIL;
        }
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------ strict validation
 *
 * With `strict` (the caller has not parsed the bytes: `stats` of a directory) the scan is also
 * the validation simdjson did before it, in the same pass: it accepts no document simdjson
 * refuses. Everything the scan reads or skips is read by the JSON grammar (RFC 8259): strings
 * (no byte below 0x20, only the escapes JSON has, \u with four hex digits and no lone
 * surrogate, well-formed UTF-8: no overlong form, no surrogate, nothing past U+10FFFF),
 * numbers (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; an integer within int64, or
 * uint64 when positive, as simdjson's; tighter than simdjson, a number with a fraction or
 * exponent of at most 64 digits whose magnitude stays within [1e-307, 1e308), where a double
 * holds it as a normal number), `true`, `false`, `null`,
 * and containers nested at most `max_depth` deep; the top level is an object with an `events`
 * array, nothing but whitespace after it. Whatever else is declined (BAIL): the pure-Python
 * path then decides. */

/* The length of the well-formed UTF-8 sequence at p (a byte >= 0x80), or 0. */
static inline int
utf8_length(const unsigned char *p, Py_ssize_t left)
{
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        return left >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) {
            return 0;
        }
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) {
            return 0; /* overlong, or a surrogate */
        }
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80) {
            return 0;
        }
        if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) {
            return 0; /* overlong, or past U+10FFFF */
        }
        return 4;
    }
    return 0; /* a continuation byte, an overlong lead (C0, C1) or F5..FF */
}

/* `scan_string` that also checks the string (above): the position after it, or BAIL. */
static Py_ssize_t
scan_string_strict(const Src *src, Py_ssize_t pos, char *esc)
{
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n;
    pos++;
    for (;;) {
#if defined(__SSE2__)
        /* sixteen bytes at a time up to the first quote, backslash, or byte below 0x20 or
         * from 0x80 (a signed comparison with 0x20 finds both) */
        while (pos + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + pos));
            int m = _mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))));
            if (m != 0) {
                pos += __builtin_ctz((unsigned int)m);
                break;
            }
            pos += 16;
        }
#endif
        while (pos < n) {
            unsigned char c = s[pos];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) {
                break;
            }
            pos++;
        }
        if (pos >= n) {
            return BAIL;
        }
        unsigned char c = s[pos];
        if (c == '"') {
            return pos + 1;
        }
        if (c < 0x20) {
            return BAIL;
        }
        if (c >= 0x80) {
            int len = utf8_length(s + pos, n - pos);
            if (len == 0) {
                return BAIL;
            }
            pos += len;
            continue;
        }
        /* a backslash */
        *esc = 1;
        if (n - pos < 2) {
            return BAIL;
        }
        switch (s[pos + 1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            pos += 2;
            continue;
        case 'u':
            break;
        default:
            return BAIL;
        }
        unsigned int cp, low;
        if (n - pos < 6 || hex4(s + pos + 2, &cp) < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) {
            return BAIL; /* (a lone low surrogate) */
        }
        pos += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (n - pos < 6 || s[pos] != '\\' || s[pos + 1] != 'u' ||
                hex4(s + pos + 2, &low) < 0 || low < 0xDC00 || low > 0xDFFF) {
                return BAIL; /* a lone high surrogate */
            }
            pos += 6;
        }
    }
}

static inline int
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* The end of the number at pos by the JSON grammar, within the ranges above, or BAIL. What
 * follows it is the caller's to check (a separator or whitespace: `01`, `1.2.3` are refused
 * there). */
static Py_ssize_t
check_number(const Src *src, Py_ssize_t pos)
{
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n, at = pos;
    if (at < n && s[at] == '-') {
        at++;
    }
    Py_ssize_t first = at;
    if (at < n && s[at] == '0') {
        at++;
    }
    else if (at < n && s[at] >= '1' && s[at] <= '9') {
        while (at < n && is_digit(s[at])) {
            at++;
        }
    }
    else {
        return BAIL;
    }
    Py_ssize_t whole = at - first;
    if (at >= n || (s[at] != '.' && s[at] != 'e' && s[at] != 'E')) {
        /* an integer: within int64, or uint64 when positive */
        if (whole <= 18) {
            return at;
        }
        if (whole > 20) {
            return BAIL;
        }
        uint64_t v = 0;
        for (Py_ssize_t i = first; i < at; i++) {
            uint64_t d = (uint64_t)(s[i] - '0');
            if (v > (UINT64_MAX - d) / 10) {
                return BAIL;
            }
            v = v * 10 + d;
        }
        return first > pos && v > 9223372036854775808ULL ? BAIL : at;
    }
    Py_ssize_t fraction = 0;
    if (s[at] == '.') {
        at++;
        Py_ssize_t digits = at;
        while (at < n && is_digit(s[at])) {
            at++;
        }
        fraction = at - digits;
        if (fraction == 0) {
            return BAIL;
        }
    }
    long exponent = 0;
    if (at < n && (s[at] == 'e' || s[at] == 'E')) {
        at++;
        int negative = 0;
        if (at < n && (s[at] == '+' || s[at] == '-')) {
            negative = s[at] == '-';
            at++;
        }
        Py_ssize_t digits = at;
        while (at < n && is_digit(s[at])) {
            if (at - digits < 4) {
                exponent = exponent * 10 + (s[at] - '0');
            }
            at++;
        }
        if (at == digits || at - digits > 4) {
            return BAIL;
        }
        exponent = negative ? -exponent : exponent;
    }
    /* |value| < 10^(whole + exponent) and, unless 0, >= 10^(exponent - fraction) */
    if (whole + fraction > 64 || whole + exponent > 308 || exponent - fraction < -307) {
        return BAIL;
    }
    return at;
}

/* `skip_container` that also checks the container by the grammar (above): the position after
 * it, or BAIL. Iterative: a byte per open container says which (object 1, array 0). */
#define CHECK_LEVELS 1100

static Py_ssize_t
check_container(const Src *src, Py_ssize_t pos, long depth)
{
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n;
    unsigned char object[CHECK_LEVELS];
    int level = 0;
    char esc = 0;
    for (;;) {
        /* a value at pos */
        if (pos >= n) {
            return BAIL;
        }
        unsigned char c = s[pos];
        if (c == '{' || c == '[') {
            if (level + 1 >= CHECK_LEVELS || depth + level > src->max_depth) {
                return BAIL;
            }
            object[++level] = c == '{';
            pos = skip_ws(src, pos + 1);
            if (pos < n && s[pos] == (c == '{' ? '}' : ']')) {
                pos++;
                level--;
                goto after_value;
            }
            if (c == '[') {
                continue;
            }
            goto member;
        }
        if (c == '"') {
            pos = scan_string_strict(src, pos, &esc);
        }
        else if (c == '-' || is_digit(c)) {
            pos = check_number(src, pos);
        }
        else if (c == 't' && n - pos >= 4 && memcmp(s + pos, "true", 4) == 0) {
            pos += 4;
        }
        else if (c == 'f' && n - pos >= 5 && memcmp(s + pos, "false", 5) == 0) {
            pos += 5;
        }
        else if (c == 'n' && n - pos >= 4 && memcmp(s + pos, "null", 4) == 0) {
            pos += 4;
        }
        else {
            return BAIL;
        }
        if (pos < 0) {
            return BAIL;
        }
    after_value:
        if (level == 0) {
            return pos;
        }
        pos = skip_ws(src, pos);
        if (pos >= n) {
            return BAIL;
        }
        if (s[pos] == (object[level] ? '}' : ']')) {
            pos++;
            level--;
            goto after_value;
        }
        if (s[pos] != ',') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
        if (!object[level]) {
            continue;
        }
    member:
        /* a member's key at pos, then its value */
        if (pos >= n || s[pos] != '"') {
            return BAIL;
        }
        pos = scan_string_strict(src, pos, &esc);
        if (pos < 0) {
            return BAIL;
        }
        pos = skip_ws(src, pos);
        if (pos >= n || s[pos] != ':') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
    }
}

/* Append the decoded UTF-8 of a string token to out: BAIL on a bad escape or a lone surrogate
 * (the bytes themselves are checked as UTF-8 when made a str). */
static int
decode_string(const Src *src, const Tok *tok, Buf *out)
{
    const unsigned char *s = src->s;
    Py_ssize_t at = tok->start + 1, end = tok->end - 1;
    if (tok->type != 's' || end < at || tok->end > src->n) {
        return BAIL;
    }
    if (!tok->esc) {
        return buf_put(out, s + at, (size_t)(end - at));
    }
    int rc = buf_reserve(out, (size_t)(end - at));
    if (rc < 0) {
        return rc;
    }
    while (at < end) {
        unsigned char c = s[at];
        if (c != '\\') {
            Py_ssize_t run = at;
            while (run < end && s[run] != '\\') {
                run++;
            }
            if ((rc = buf_put(out, s + at, (size_t)(run - at))) < 0) {
                return rc;
            }
            at = run;
            continue;
        }
        if (at + 1 >= end) {
            return BAIL;
        }
        unsigned char e = s[at + 1];
        unsigned char one;
        switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': one = 0; break;
        default: return BAIL;
        }
        if (e != 'u') {
            if ((rc = buf_put(out, &one, 1)) < 0) {
                return rc;
            }
            at += 2;
            continue;
        }
        unsigned int cp;
        if (end - at < 6 || hex4(s + at + 2, &cp) < 0) {
            return BAIL;
        }
        at += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return BAIL; /* a lone low surrogate */
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned int low;
            if (end - at < 6 || s[at] != '\\' || s[at + 1] != 'u' ||
                hex4(s + at + 2, &low) < 0 || low < 0xDC00 || low > 0xDFFF) {
                return BAIL; /* a lone high surrogate */
            }
            at += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        unsigned char u[4];
        size_t len;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            len = 1;
        }
        else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            len = 2;
        }
        else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            len = 3;
        }
        else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            len = 4;
        }
        if ((rc = buf_put(out, u, len)) < 0) {
            return rc;
        }
    }
    return 0;
}

/* An integer token as int64: BAIL for a fraction, an exponent, or beyond 64 bits. */
static int
parse_int(const Src *src, const Tok *tok, long long *out)
{
    const unsigned char *s = src->s;
    Py_ssize_t at = tok->start, end = tok->end;
    int negative = 0;
    if (at < end && s[at] == '-') {
        negative = 1;
        at++;
    }
    if (at >= end || end - at > 19) {
        return BAIL;
    }
    unsigned long long v = 0;
    for (; at < end; at++) {
        unsigned char c = s[at];
        if (c < '0' || c > '9') {
            return BAIL;
        }
        v = v * 10 + (unsigned long long)(c - '0');
    }
    if (negative ? v > 9223372036854775808ULL : v > 9223372036854775807ULL) {
        return BAIL;
    }
    *out = negative ? (long long)(0 - v) : (long long)v;
    return 0;
}

/* How a field's value may be read where Python compares or hashes it. */
#define ID_FIELD 1  /* id, thread_id, parent_id: a string, an int, null or missing (-> None) */
#define KEY_FIELD 2 /* a function key field: also true/false; missing stays apart from null */

/* Append a canonical form of a token to out: equal forms are equal Python values. */
static int
canonical(const Src *src, const Tok *tok, int how, Buf *out)
{
    unsigned char tag;
    switch (tok->type) {
    case 0:
        tag = how == ID_FIELD ? 'n' : 'u';
        return buf_put(out, &tag, 1);
    case 'n':
        tag = 'n';
        return buf_put(out, &tag, 1);
    case 't':
    case 'f':
        if (how != KEY_FIELD) {
            return BAIL;
        }
        tag = (unsigned char)tok->type;
        return buf_put(out, &tag, 1);
    case '0': {
        long long v;
        if (parse_int(src, tok, &v) < 0) {
            return BAIL;
        }
        tag = 'i';
        int rc = buf_put(out, &tag, 1);
        return rc < 0 ? rc : buf_put(out, &v, sizeof(v));
    }
    case 's': {
        tag = 's';
        int rc = buf_put(out, &tag, 1);
        if (rc < 0) {
            return rc;
        }
        size_t at = out->len;
        uint64_t len = 0;
        if ((rc = buf_put(out, &len, sizeof(len))) < 0) {
            return rc;
        }
        if ((rc = decode_string(src, tok, out)) < 0) {
            return rc;
        }
        len = (uint64_t)(out->len - at - sizeof(len));
        memcpy(out->p + at, &len, sizeof(len));
        return 0;
    }
    default:
        return BAIL;
    }
}

/* The Python value of a token read by msgspec as `Any` (no floats or containers here). */
static PyObject *
value_of(const Src *src, const Tok *tok, PyObject *unset, Buf *scratch, int *rc)
{
    *rc = 0;
    switch (tok->type) {
    case 0:
        Py_INCREF(unset);
        return unset;
    case 'n':
        Py_RETURN_NONE;
    case 't':
        Py_RETURN_TRUE;
    case 'f':
        Py_RETURN_FALSE;
    case '0': {
        long long v;
        if (parse_int(src, tok, &v) < 0) {
            *rc = BAIL;
            return NULL;
        }
        return PyLong_FromLongLong(v);
    }
    case 's': {
        scratch->len = 0;
        if ((*rc = decode_string(src, tok, scratch)) < 0) {
            return NULL;
        }
        PyObject *str = PyUnicode_DecodeUTF8(
            scratch->len ? (const char *)scratch->p : "", (Py_ssize_t)scratch->len, "strict");
        if (str == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            *rc = BAIL;
        }
        return str;
    }
    default:
        *rc = BAIL;
        return NULL;
    }
}

/* ------------------------------------------------------------------ objects and fields */

enum {
    F_ID,
    F_EVENT,
    F_THREAD,
    F_PARENT,
    F_CLASS,
    F_METHOD,
    F_PATH,
    F_LINENO,
    F_STATIC,
    F_SQL,
    F_SERVER,
    F_CLIENT,
    F_ELAPSED,
    F_COUNT
};

static const char *const EVENT_FIELDS[F_COUNT] = {
    "id", "event", "thread_id", "parent_id", "defined_class", "method_id", "path", "lineno",
    "static", "sql_query", "http_server_request", "http_client_request",
    "elapsed_instrumentation"};

/* An object's key (`read_key`): its name, decoded (into the scratch buffer) when it holds a
 * backslash; `end` the position after its closing quote, or BAIL. */
typedef struct {
    const unsigned char *name;
    size_t len;
    Py_ssize_t end;
} Key;

/* The object key at s[pos] (which must be its opening quote), scanned by `pr_string` when
 * `checked` (prune: a text already checked as JSON) or else by `scan_string`; end BAIL when
 * there is none (*rc set when its decoding failed). `checked` is a constant at each call, so
 * the inlined copy keeps only its own scanner. */
static inline Key
read_key(const Src *src, Py_ssize_t pos, int checked, Buf *scratch, int *rc)
{
    Key out = {NULL, 0, BAIL};
    if (pos >= src->n || src->s[pos] != '"') {
        return out;
    }
    Tok key; /* (its end is stored once: an initializer would store it twice per key) */
    key.start = pos;
    key.type = 's';
    key.esc = 0;
    key.end = checked ? pr_string(src->s, src->n, pos, &key.esc)
                      : scan_string(src, pos, &key.esc);
    if (key.end < 0) {
        return out;
    }
    out.name = src->s + pos + 1;
    out.len = (size_t)(key.end - pos - 2);
    if (key.esc) {
        scratch->len = 0;
        if ((*rc = decode_string(src, &key, scratch)) < 0) {
            return out;
        }
        out.name = scratch->p;
        out.len = scratch->len;
    }
    out.end = key.end;
    return out;
}

/* Parse the object at pos (`{`, nested at `depth`), recording the values of the `count` keys
 * `names` in toks (a duplicate is BAIL); the position after it, or BAIL. */
static Py_ssize_t
scan_object(const Src *src, Py_ssize_t pos, long depth, const char *const *names, int count,
            Tok *toks, Buf *scratch, int *rc)
{
    const unsigned char *s = src->s;
    *rc = 0;
    if (depth > src->max_depth || pos >= src->n || s[pos] != '{') {
        return BAIL;
    }
    for (int i = 0; i < count; i++) {
        toks[i].type = 0;
    }
    pos = skip_ws(src, pos + 1);
    if (pos < src->n && s[pos] == '}') {
        return pos + 1;
    }
    for (;;) {
        Key key = read_key(src, pos, 0, scratch, rc);
        if ((pos = key.end) < 0) {
            return BAIL;
        }
        int field = -1;
        for (int i = 0; key.len > 0 && i < count; i++) {
            if (names[i][0] == key.name[0] && strlen(names[i]) == key.len &&
                memcmp(names[i], key.name, key.len) == 0) {
                field = i;
                break;
            }
        }
        pos = skip_ws(src, pos);
        if (pos >= src->n || s[pos] != ':') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
        Tok value;
        pos = skip_value(src, pos, depth + 1, &value);
        if (pos < 0) {
            return BAIL;
        }
        if (field >= 0) {
            if (toks[field].type != 0) {
                return BAIL; /* a duplicate key: which one a decoder keeps is its own rule */
            }
            toks[field] = value;
        }
        pos = skip_ws(src, pos);
        if (pos >= src->n) {
            return BAIL;
        }
        if (s[pos] == '}') {
            return pos + 1;
        }
        if (s[pos] != ',') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
    }
}

/* ------------------------------------------------------------------ pairing */

enum { TAG_FUNCTION = 0, TAG_SQL = 1, TAG_OTHER = 2 };

typedef struct {
    Py_ssize_t start, end; /* the call event's text */
    size_t key_off, key_len; /* its group key in State.keys */
    size_t id_off, id_len;   /* its canonical id in State.keys */
    Py_ssize_t below;        /* the call under it on its thread's stack, or -1 */
    int tag;
    Tok vals[5]; /* the values its key is made of (function: 5, SQL: 2) */
} Call;

typedef struct {
    long long calls;
    double seconds;
    Py_ssize_t call; /* its first call (in State.calls) */
} Group;

typedef struct {
    Src src;
    Buf keys;    /* canonical keys and ids of the calls */
    Buf calls;   /* Call[] */
    Buf groups;  /* Group[] in order of creation */
    Buf scratch; /* decoded strings */
    Table threads, group_of, ids;
    int ids_in_table;  /* whether `ids` holds the call ids; until then they rise as ints */
    long long last_id; /* (the last, while they rise) */
    Slot *last_thread; /* (thread_slot) */
    Tok last_thread_tok; /* (thread_slot: the text it was last met as) */
    Buf nodes;         /* Node[]: the classMap's items (class_items) */
    Table where;       /* location -> its first function node */
    int class_map_read;
    PyObject *chains; /* (cached_chain) a dict, or NULL */
    PyObject *namer;  /* (cached_chain) a callable, or NULL */
} State;

static void
state_free(State *st)
{
    PyMem_Free(st->keys.p);
    PyMem_Free(st->calls.p);
    PyMem_Free(st->groups.p);
    PyMem_Free(st->scratch.p);
    table_free(&st->threads);
    table_free(&st->group_of);
    table_free(&st->ids);
    PyMem_Free(st->nodes.p);
    table_free(&st->where);
}

static const char *const SQL_FIELDS[2] = {"sql", "database_type"};
static const char *const HTTP_FIELDS[4] = {"request_method", "path_info",
                                           "normalized_path_info", "url"};

/* The group key of a call (appended to st->keys) and its tag and values. */
static int
call_key(State *st, const Tok *f, Py_ssize_t event_depth, Call *call)
{
    Buf *out = &st->keys;
    int rc = 0;
    unsigned char tag;
    if (f[F_SQL].type != 0) {
        Tok q[2];
        if (f[F_SQL].type != '{' ||
            scan_object(&st->src, f[F_SQL].start, event_depth + 1, SQL_FIELDS, 2, q,
                        &st->scratch, &rc) < 0) {
            return rc < 0 && rc != BAIL ? rc : BAIL;
        }
        tag = 'Q';
        if ((rc = buf_put(out, &tag, 1)) < 0) {
            return rc;
        }
        for (int i = 0; i < 2; i++) {
            /* str(value or ""): a string, or null / missing for "" */
            if (q[i].type != 's' && q[i].type != 'n' && q[i].type != 0) {
                return BAIL;
            }
            Tok t = q[i];
            if (t.type == 'n') {
                t.type = 0;
            }
            if ((rc = canonical(&st->src, &t, KEY_FIELD, out)) < 0) {
                return rc;
            }
            call->vals[i] = t;
        }
        call->tag = TAG_SQL;
        return 0;
    }
    if (f[F_SERVER].type != 0 || f[F_CLIENT].type != 0) {
        int server = f[F_SERVER].type != 0;
        if (server && f[F_CLIENT].type != 0) {
            return BAIL;
        }
        const Tok *request = &f[server ? F_SERVER : F_CLIENT];
        Tok h[4];
        if (request->type != '{' ||
            scan_object(&st->src, request->start, event_depth + 1, HTTP_FIELDS, 4, h,
                        &st->scratch, &rc) < 0) {
            return rc < 0 && rc != BAIL ? rc : BAIL;
        }
        tag = server ? 'S' : 'C';
        if ((rc = buf_put(out, &tag, 1)) < 0) {
            return rc;
        }
        for (int i = 0; i < 4; i++) {
            if (h[i].type != 's' && h[i].type != 'n' && h[i].type != 0) {
                return BAIL;
            }
        }
        /* the route: request_method and (server) normalized_path_info when not empty, else
         * path_info, or (client) url */
        const Tok *parts[2] = {&h[0], &h[3]};
        if (server) {
            int template = h[2].type == 's' && h[2].end - h[2].start > 2;
            parts[1] = template ? &h[2] : &h[1];
            tag = template ? 'N' : 'P';
            if ((rc = buf_put(out, &tag, 1)) < 0) {
                return rc;
            }
        }
        for (int i = 0; i < 2; i++) {
            if ((rc = canonical(&st->src, parts[i], KEY_FIELD, out)) < 0) {
                return rc;
            }
        }
        call->tag = TAG_OTHER;
        return 0;
    }
    if (f[F_METHOD].type == 0 || f[F_METHOD].type == 'n') {
        /* no method_id: keyed by kind (is method_id or defined_class present) and
         * str(defined_class or "") */
        tag = 'O';
        if ((rc = buf_put(out, &tag, 1)) < 0) {
            return rc;
        }
        tag = f[F_METHOD].type == 0 ? 'u' : 'n';
        if ((rc = buf_put(out, &tag, 1)) < 0) {
            return rc;
        }
        if ((rc = canonical(&st->src, &f[F_CLASS], KEY_FIELD, out)) < 0) {
            return rc;
        }
        call->tag = TAG_OTHER;
        return 0;
    }
    tag = 'F';
    if ((rc = buf_put(out, &tag, 1)) < 0) {
        return rc;
    }
    for (int i = 0; i < 5; i++) {
        if ((rc = canonical(&st->src, &f[F_CLASS + i], KEY_FIELD, out)) < 0) {
            return rc;
        }
        call->vals[i] = f[F_CLASS + i];
    }
    call->tag = TAG_FUNCTION;
    return 0;
}

/* The seconds a return adds: *add 0 when its elapsed_instrumentation is not a non-zero number. */
static int
seconds_of(const Src *src, const Tok *tok, double *add)
{
    *add = 0.0;
    if (tok->type != '0') {
        return 0; /* (Python adds only an int or a float) */
    }
    long long v;
    Py_ssize_t len = tok->end - tok->start;
    int integral = 1;
    for (Py_ssize_t i = tok->start; i < tok->end; i++) {
        unsigned char c = src->s[i];
        if (c == '.' || c == 'e' || c == 'E') {
            integral = 0;
        }
    }
    if (integral) {
        if (parse_int(src, tok, &v) < 0) {
            return BAIL;
        }
        *add = (double)v;
        return 0;
    }
    /* Clinger's fast path: at most 15 significant digits (exact as a double) times a power of
     * ten within 1e22 either way (exact too): one multiplication or division of two exact
     * doubles, correctly rounded, as any correct parser's result. Anything else is parsed by
     * Python. */
    {
        const unsigned char *p = src->s + tok->start, *e = src->s + tok->end;
        int negative = p < e && *p == '-';
        p += negative;
        unsigned long long mantissa = 0;
        int digits = 0, fraction = 0, point = 0, ok = p < e && *p >= '0' && *p <= '9';
        long exponent = 0;
        for (; ok && p < e; p++) {
            if (*p >= '0' && *p <= '9') {
                if (mantissa != 0 || *p != '0') {
                    digits++;
                }
                mantissa = mantissa * 10 + (unsigned)(*p - '0');
                fraction += point;
                if (digits > 15 || fraction > 40) {
                    ok = 0;
                }
            }
            else if (*p == '.' && !point) {
                point = 1;
            }
            else if (*p == 'e' || *p == 'E') {
                p++;
                int sign = 1;
                if (p < e && (*p == '-' || *p == '+')) {
                    sign = *p == '-' ? -1 : 1;
                    p++;
                }
                if (p >= e || e - p > 4) {
                    ok = 0;
                    break;
                }
                for (; p < e; p++) {
                    if (*p < '0' || *p > '9') {
                        ok = 0;
                        break;
                    }
                    exponent = exponent * 10 + (*p - '0');
                }
                exponent *= sign;
                break;
            }
            else {
                ok = 0;
            }
        }
        long power = exponent - fraction;
        if (ok && power >= -22 && power <= 22) {
            static const double tens[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                            1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
            double d = (double)mantissa;
            d = power < 0 ? d / tens[-power] : d * tens[power];
            *add = negative ? -d : d;
            return 0;
        }
    }
    char text[64];
    if (len <= 0 || len >= (Py_ssize_t)sizeof(text)) {
        return BAIL;
    }
    memcpy(text, src->s + tok->start, (size_t)len);
    text[len] = 0;
    char *end = NULL;
    double d = PyOS_string_to_double(text, &end, NULL);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return BAIL;
    }
    if (end != text + len || !isfinite(d)) {
        return BAIL;
    }
    *add = d;
    return 0;
}

/* The stack top of a thread (its slot in st->threads); NULL with *rc on error. The last thread
 * met is remembered: its slot stays where it is until a new thread is added. */
static Slot *
thread_slot(State *st, const Tok *thread, int *rc)
{
    const Tok *last = &st->last_thread_tok;
    *rc = 0;
    if (st->last_thread != NULL && thread->type == last->type &&
        (thread->type == 0 ||
         (thread->end - thread->start == last->end - last->start &&
          memcmp(st->src.s + thread->start, st->src.s + last->start,
                 (size_t)(thread->end - thread->start)) == 0))) {
        return st->last_thread; /* (the same text, or missing again: the same thread) */
    }
    size_t at = st->keys.len;
    *rc = canonical(&st->src, thread, ID_FIELD, &st->keys);
    if (*rc < 0) {
        return NULL;
    }
    const unsigned char *key = st->keys.p + at;
    size_t len = st->keys.len - at;
    Slot *slot;
    if (st->last_thread != NULL && st->last_thread->len == len &&
        memcmp(st->threads.arena.p + st->last_thread->off, key, len) == 0) {
        slot = st->last_thread;
    }
    else {
        slot = table_get(&st->threads, key, len, 1, -1, rc);
        st->last_thread = slot;
    }
    st->last_thread_tok = *thread;
    st->keys.len = at; /* (the table keeps its own copy) */
    return slot;
}

/* 0 when a call's id (canonical, in st->keys) is not one of an earlier call, else BAIL (a call
 * id used twice: `iter_pairs` pairs it). While the ids are ints that rise (the common case) a
 * new one is the last plus; at the first that does not, the earlier ones go in `ids`. */
static int
new_call_id(State *st, const Call *call)
{
    const unsigned char *id = st->keys.p + call->id_off;
    int rc;
    if (!st->ids_in_table) {
        long long v;
        size_t count = st->calls.len / sizeof(Call);
        if (call->id_len == 1 + sizeof(v) && id[0] == 'i') {
            memcpy(&v, id + 1, sizeof(v));
            if (count == 0 || v > st->last_id) {
                st->last_id = v;
                return 0;
            }
        }
        st->ids_in_table = 1;
        for (size_t i = 0; i < count; i++) {
            const Call *earlier = (const Call *)st->calls.p + i;
            if (table_get(&st->ids, st->keys.p + earlier->id_off, earlier->id_len, 1, 0, &rc) ==
                NULL) {
                return rc < 0 ? rc : BAIL;
            }
        }
        id = st->keys.p + call->id_off; /* (unchanged: the table keeps its own copies) */
    }
    if (table_get(&st->ids, id, call->id_len, 1, 0, &rc) == NULL) {
        return rc < 0 ? rc : BAIL;
    }
    return rc == 1 ? 0 : BAIL;
}

static int
one_event(State *st, Py_ssize_t start, Py_ssize_t *pos_out)
{
    Tok f[F_COUNT];
    int rc;
    Py_ssize_t end = scan_object(&st->src, start, 3, EVENT_FIELDS, F_COUNT, f, &st->scratch, &rc);
    if (end < 0) {
        return rc < 0 && rc != BAIL ? rc : BAIL;
    }
    *pos_out = end;
    const Tok *kind = &f[F_EVENT];
    int is_call = 0, is_return = 0;
    if (kind->type == 's' && !kind->esc) {
        const unsigned char *text = st->src.s + kind->start;
        Py_ssize_t len = kind->end - kind->start;
        is_call = len == 6 && memcmp(text, "\"call\"", 6) == 0;
        is_return = len == 8 && memcmp(text, "\"return\"", 8) == 0;
    }
    else if (kind->type == 's') {
        st->scratch.len = 0;
        if ((rc = decode_string(&st->src, kind, &st->scratch)) < 0) {
            return rc;
        }
        is_call = st->scratch.len == 4 && memcmp(st->scratch.p, "call", 4) == 0;
        is_return = st->scratch.len == 6 && memcmp(st->scratch.p, "return", 6) == 0;
    }
    else if (kind->type == '{' || kind->type == '[') {
        return BAIL; /* a container in a structural field: the readers clean it, with a warning */
    }
    for (int i = F_ID; i <= F_PARENT; i++) {
        if (f[i].type == '{' || f[i].type == '[') {
            return BAIL;
        }
    }
    if (f[F_ID].type == 'n') {
        return BAIL; /* `id is null`: a field defect for the dict reader */
    }
    if (!is_call && !is_return) {
        return 0;
    }
    int err;
    Slot *top = thread_slot(st, &f[F_THREAD], &err);
    if (top == NULL) {
        return err;
    }
    if (is_call) {
        Call call;
        memset(&call, 0, sizeof(call));
        call.start = start;
        call.end = end;
        call.id_off = st->keys.len;
        if ((rc = canonical(&st->src, &f[F_ID], ID_FIELD, &st->keys)) < 0) {
            return rc;
        }
        call.id_len = st->keys.len - call.id_off;
        if ((rc = new_call_id(st, &call)) < 0) {
            return rc;
        }
        call.key_off = st->keys.len;
        if ((rc = call_key(st, f, 3, &call)) < 0) {
            return rc;
        }
        call.key_len = st->keys.len - call.key_off;
        call.below = top->value;
        Py_ssize_t index = (Py_ssize_t)(st->calls.len / sizeof(Call));
        if ((rc = buf_put(&st->calls, &call, sizeof(call))) < 0) {
            return rc;
        }
        top->value = index;
        return 0;
    }
    /* a return */
    const Tok *parent = &f[F_PARENT];
    int no_parent = parent->type == 0 || parent->type == 'n';
    if (top->value < 0) {
        return no_parent ? 0 : BAIL; /* closes nothing, or does not nest plainly */
    }
    Call *call = (Call *)st->calls.p + top->value;
    top->value = call->below;
    if (!no_parent) {
        size_t at = st->keys.len;
        if ((rc = canonical(&st->src, parent, ID_FIELD, &st->keys)) < 0) {
            return rc;
        }
        size_t len = st->keys.len - at;
        int same = len == call->id_len &&
                   memcmp(st->keys.p + at, st->keys.p + call->id_off, len) == 0;
        st->keys.len = at;
        if (!same) {
            return BAIL;
        }
    }
    double add;
    if ((rc = seconds_of(&st->src, &f[F_ELAPSED], &add)) < 0) {
        return rc;
    }
    Py_ssize_t index = call - (Call *)st->calls.p;
    Py_ssize_t count = (Py_ssize_t)(st->groups.len / sizeof(Group));
    Slot *slot = table_get(&st->group_of, st->keys.p + call->key_off, call->key_len, 1, count,
                           &rc);
    if (slot == NULL) {
        return rc < 0 ? rc : BAIL;
    }
    if (slot->value == count) {
        Group group = {0, 0.0, index};
        if ((rc = buf_put(&st->groups, &group, sizeof(group))) < 0) {
            return rc;
        }
    }
    Group *group = (Group *)st->groups.p + slot->value;
    group->calls++;
    if (add != 0.0) {
        group->seconds += add;
    }
    return 0;
}

static const char *const TOP_FIELDS[5] = {"events", "classMap", "metadata", "eventUpdates",
                                          "version"};

/* Walk the document; the events are paired as they are met. */
static int
walk(State *st, Py_ssize_t *class_map)
{
    const Src *src = &st->src;
    const unsigned char *s = src->s;
    int seen[5] = {0, 0, 0, 0, 0};
    int rc;
    class_map[0] = class_map[1] = -1;
    Py_ssize_t pos = skip_ws(src, 0);
    if (pos >= src->n || s[pos] != '{' || src->max_depth < 3) {
        return BAIL;
    }
    pos = skip_ws(src, pos + 1);
    if (pos < src->n && s[pos] == '}') {
        return BAIL; /* no events, classMap or metadata */
    }
    for (;;) {
        if (pos >= src->n || s[pos] != '"') {
            return BAIL;
        }
        Tok key = {pos, 0, 's', 0};
        key.end = scan_string(src, pos, &key.esc);
        if (key.end < 0 || key.esc) {
            return BAIL; /* (an escaped top-level key: not the common case) */
        }
        int field = -1;
        size_t len = (size_t)(key.end - key.start - 2);
        for (int i = 0; i < 5; i++) {
            if (strlen(TOP_FIELDS[i]) == len && memcmp(TOP_FIELDS[i], s + key.start + 1, len) == 0) {
                field = i;
            }
        }
        if (field >= 0) {
            if (seen[field] || field == 3) {
                return BAIL; /* a duplicate, or eventUpdates */
            }
            seen[field] = 1;
        }
        pos = skip_ws(src, key.end);
        if (pos >= src->n || s[pos] != ':') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
        if (pos >= src->n) {
            return BAIL;
        }
        Tok value;
        if (field == 0) {
            if (s[pos] != '[') {
                return BAIL;
            }
            pos = skip_ws(src, pos + 1);
            if (pos < src->n && s[pos] == ']') {
                pos++;
            }
            else {
                for (;;) {
                    if (pos >= src->n || s[pos] != '{') {
                        return BAIL; /* a non-object event: dropped with a warning */
                    }
                    if ((rc = one_event(st, pos, &pos)) < 0) {
                        return rc;
                    }
                    pos = skip_ws(src, pos);
                    if (pos >= src->n) {
                        return BAIL;
                    }
                    if (s[pos] == ']') {
                        pos++;
                        break;
                    }
                    if (s[pos] != ',') {
                        return BAIL;
                    }
                    pos = skip_ws(src, pos + 1);
                }
            }
        }
        else {
            pos = skip_value(src, pos, 2, &value);
            if (pos < 0) {
                return BAIL;
            }
            if (field == 1) {
                if (value.type != '[') {
                    return BAIL;
                }
                class_map[0] = value.start;
                class_map[1] = value.end;
            }
            else if (field == 2 && value.type != '{') {
                return BAIL;
            }
        }
        pos = skip_ws(src, pos);
        if (pos >= src->n) {
            return BAIL;
        }
        if (s[pos] == '}') {
            pos++;
            break;
        }
        if (s[pos] != ',') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
    }
    if (skip_ws(src, pos) != src->n) {
        return BAIL;
    }
    if ((!seen[0] && !seen[1] && !seen[2]) || (src->strict && !seen[0])) {
        return BAIL; /* (strict: no `events`, which simdjson's check wanted) */
    }
    return 0;
}

/* ------------------------------------------------------------------ classMap names */

/* The classMap read as `tracetool.stats._names.RecordingNames._locations` reads it: its items in
 * document order (depth first), each function with a non-empty location indexed by it. A
 * classMap this does not read plainly (a field of another type, a duplicate field, nesting past
 * `CLASS_DEPTH` items) is not used: every function is then named by Python. */
typedef struct {
    Tok kind, name, location; /* kind.type 0: "package" */
    int is_static, function, plain;
    Py_ssize_t parent; /* the item it is a child of, or -1 */
    Py_ssize_t next;   /* the next function at the same location, or -1 */
} Node;

#define CLASS_DEPTH 64

static const char *const CLASS_FIELDS[5] = {"type", "name", "static", "location", "children"};

static int
tok_equals(const Src *src, const Tok *tok, const char *text, Buf *scratch)
{
    scratch->len = 0;
    if (tok->type != 's' || decode_string(src, tok, scratch) < 0) {
        return 0;
    }
    size_t len = strlen(text);
    return scratch->len == len && memcmp(scratch->p, text, len) == 0;
}

/* Read the items of the array at pos (nested at `depth`, `level` items deep) under `parent`. */
static Py_ssize_t
class_items(State *st, Py_ssize_t pos, long depth, int level, Py_ssize_t parent, int plain)
{
    const Src *src = &st->src;
    const unsigned char *s = src->s;
    int rc;
    if (level > CLASS_DEPTH || depth > src->max_depth || pos >= src->n || s[pos] != '[') {
        return BAIL;
    }
    pos = skip_ws(src, pos + 1);
    if (pos < src->n && s[pos] == ']') {
        return pos + 1;
    }
    for (;;) {
        if (pos >= src->n) {
            return BAIL;
        }
        Py_ssize_t end;
        if (s[pos] != '{') {
            Tok skipped;
            end = skip_value(src, pos, depth + 1, &skipped); /* (not an object: skipped) */
        }
        else {
            Tok f[5];
            end = scan_object(src, pos, depth + 1, CLASS_FIELDS, 5, f, &st->scratch, &rc);
            if (end < 0) {
                return BAIL;
            }
            Node node;
            node.kind = f[0];
            node.name = f[1];
            node.location = f[3];
            node.parent = parent;
            node.next = -1;
            node.plain = plain;
            /* str(type or "package"), str(name if present else ""), bool(static or False) */
            if (f[0].type == 'n' || (f[0].type == 's' && f[0].end - f[0].start == 2)) {
                node.kind.type = 0;
            }
            if ((node.kind.type != 0 && node.kind.type != 's') ||
                (f[1].type != 0 && f[1].type != 's') ||
                (f[2].type != 0 && f[2].type != 'n' && f[2].type != 't' && f[2].type != 'f') ||
                (f[3].type != 0 && f[3].type != 'n' && f[3].type != 's')) {
                return BAIL;
            }
            node.is_static = f[2].type == 't';
            node.function = tok_equals(src, &node.kind, "function", &st->scratch);
            Py_ssize_t index = (Py_ssize_t)(st->nodes.len / sizeof(Node));
            if ((rc = buf_put(&st->nodes, &node, sizeof(node))) < 0) {
                return rc;
            }
            if (node.function && f[3].type == 's' && f[3].end - f[3].start > 2) {
                size_t at = st->keys.len;
                if ((rc = decode_string(src, &f[3], &st->keys)) < 0) {
                    return rc;
                }
                Slot *slot = table_get(&st->where, st->keys.p + at, st->keys.len - at, 1, index,
                                       &rc);
                st->keys.len = at;
                if (slot == NULL) {
                    return rc < 0 ? rc : BAIL;
                }
                if (rc != 1) { /* append to the location's functions, in order */
                    Node *nodes = (Node *)st->nodes.p;
                    Py_ssize_t last = slot->value;
                    while (nodes[last].next >= 0) {
                        last = nodes[last].next;
                    }
                    nodes[last].next = index;
                }
            }
            if (f[4].type == '[') {
                Py_ssize_t done = class_items(st, f[4].start, depth + 2, level + 1, index,
                                              node.function ? 0 : plain);
                if (done < 0) {
                    return done;
                }
            }
        }
        if (end < 0) {
            return BAIL;
        }
        pos = skip_ws(src, end);
        if (pos >= src->n) {
            return BAIL;
        }
        if (s[pos] == ']') {
            return pos + 1;
        }
        if (s[pos] != ',') {
            return BAIL;
        }
        pos = skip_ws(src, pos + 1);
    }
}

/* A str of a token read as a str (kind 0: "package"); NULL with an exception, or *rc BAIL. */
static PyObject *
text_of(State *st, const Tok *tok, const char *missing, int *rc)
{
    if (tok->type == 0) {
        *rc = 0;
        return PyUnicode_FromString(missing);
    }
    return value_of(&st->src, tok, Py_None, &st->scratch, rc);
}

/* The chain (`_names.Chain`) of the function node, a new reference. */
static PyObject *
chain_of(State *st, Py_ssize_t index, int *rc)
{
    const Node *nodes = (const Node *)st->nodes.p;
    Py_ssize_t length = 0;
    for (Py_ssize_t at = index; at >= 0; at = nodes[at].parent) {
        length++;
    }
    PyObject *chain = PyTuple_New(length);
    if (chain == NULL) {
        return NULL;
    }
    Py_ssize_t slot = length;
    for (Py_ssize_t at = index; at >= 0; at = nodes[at].parent) {
        const Node *node = &nodes[at];
        PyObject *link = PyTuple_New(at == index ? 4 : 2);
        if (link == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(chain, --slot, link);
        PyObject *kind = text_of(st, &node->kind, "package", rc);
        if (kind == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(link, 0, kind);
        PyObject *name = text_of(st, &node->name, "", rc);
        if (name == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(link, 1, name);
        if (at == index) {
            PyObject *flag = node->is_static ? Py_True : Py_False;
            Py_INCREF(flag);
            PyTuple_SET_ITEM(link, 2, flag);
            PyObject *location = value_of(&st->src, &node->location, Py_None, &st->scratch, rc);
            if (location == NULL) {
                goto error;
            }
            PyTuple_SET_ITEM(link, 3, location);
        }
    }
    return chain;
error:
    Py_DECREF(chain);
    return NULL;
}

/* `chain_of`, or what `st->namer` makes of it (its name), the same object for the same chain
 * while `st->chains` (a dict the caller keeps from one recording to the next, by the chain's
 * canonical bytes) holds it. */
static PyObject *
cached_chain(State *st, Py_ssize_t index, int *rc)
{
    if (st->chains == NULL) {
        return chain_of(st, index, rc);
    }
    const Node *nodes = (const Node *)st->nodes.p;
    Buf *out = &st->keys;
    size_t at = out->len;
    for (Py_ssize_t i = index; i >= 0; i = nodes[i].parent) {
        unsigned char flag = (unsigned char)(i == index ? '0' + nodes[i].is_static : '-');
        if ((*rc = canonical(&st->src, &nodes[i].kind, KEY_FIELD, out)) < 0 ||
            (*rc = canonical(&st->src, &nodes[i].name, KEY_FIELD, out)) < 0 ||
            (*rc = buf_put(out, &flag, 1)) < 0 ||
            (i == index && (*rc = canonical(&st->src, &nodes[i].location, KEY_FIELD, out)) < 0)) {
            out->len = at;
            if (*rc == NOMEM) {
                return PyErr_NoMemory();
            }
            return chain_of(st, index, rc);
        }
    }
    PyObject *key = PyBytes_FromStringAndSize((const char *)out->p + at, (Py_ssize_t)(out->len - at));
    out->len = at;
    if (key == NULL) {
        return NULL;
    }
    PyObject *found = PyDict_GetItemWithError(st->chains, key);
    if (found != NULL) {
        Py_DECREF(key);
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *chain = chain_of(st, index, rc);
    if (chain != NULL && st->namer != NULL) {
        Py_SETREF(chain, PyObject_CallOneArg(st->namer, chain));
    }
    if (chain != NULL && PyDict_SetItem(st->chains, key, chain) < 0) {
        Py_CLEAR(chain);
    }
    Py_DECREF(key);
    return chain;
}

/* The chain that names a function call of this key (`RecordingNames.plain_function`: the first
 * classMap function at `path:lineno` named `method_id`), or None when Python is to name it (no
 * such function, one not plainly in the classMap, a key of other types). A new reference. */
static PyObject *
named_chain(State *st, const Call *call, int *rc)
{
    const Tok *method = &call->vals[1], *path = &call->vals[2], *lineno = &call->vals[3];
    *rc = 0;
    if (!st->class_map_read || method->type != 's' || path->type != 's' ||
        (lineno->type != 's' && lineno->type != '0')) {
        Py_RETURN_NONE;
    }
    Buf *key = &st->keys;
    size_t at = key->len;
    if ((*rc = decode_string(&st->src, path, key)) < 0 || (*rc = buf_put(key, ":", 1)) < 0) {
        goto none;
    }
    if (lineno->type == 's') {
        if ((*rc = decode_string(&st->src, lineno, key)) < 0) {
            goto none;
        }
    }
    else {
        long long number;
        char text[32];
        if (parse_int(&st->src, lineno, &number) < 0) {
            goto none;
        }
        int len = snprintf(text, sizeof(text), "%lld", number);
        if (len <= 0 || (size_t)len >= sizeof(text) || (*rc = buf_put(key, text, (size_t)len)) < 0) {
            goto none;
        }
    }
    Slot *slot = table_get(&st->where, key->p + at, key->len - at, 0, 0, rc);
    key->len = at;
    if (slot == NULL) {
        if (*rc < 0) {
            return PyErr_NoMemory();
        }
        Py_RETURN_NONE;
    }
    /* the method_id, decoded, after the nodes' names in st->keys */
    if ((*rc = decode_string(&st->src, method, key)) < 0) {
        key->len = at;
        goto none;
    }
    size_t method_len = key->len - at;
    for (Py_ssize_t index = slot->value; index >= 0;) {
        const Node *node = (const Node *)st->nodes.p + index;
        st->scratch.len = 0;
        int same = 0;
        if (node->name.type == 0) {
            same = method_len == 0;
        }
        else if (decode_string(&st->src, &node->name, &st->scratch) == 0) {
            same = st->scratch.len == method_len &&
                   memcmp(st->scratch.p, key->p + at, method_len) == 0;
        }
        if (same) {
            key->len = at;
            if (!node->plain) {
                Py_RETURN_NONE; /* (a function in a function: the full ClassMap names it) */
            }
            return cached_chain(st, index, rc);
        }
        index = node->next;
    }
    key->len = at;
none:
    if (*rc == NOMEM) {
        return PyErr_NoMemory();
    }
    *rc = 0;
    Py_RETURN_NONE;
}

/* The Python key of a function or SQL group (a new reference); NULL with *rc BAIL or an
 * exception. */
static PyObject *
key_of(State *st, const Call *call, PyObject *unset, PyObject *sql_tag, int *rc)
{
    int first = call->tag == TAG_SQL ? 1 : 0;
    int size = call->tag == TAG_SQL ? 3 : 5;
    *rc = 0;
    PyObject *key = PyTuple_New(size);
    if (key == NULL) {
        return NULL;
    }
    if (first) {
        Py_INCREF(sql_tag);
        PyTuple_SET_ITEM(key, 0, sql_tag);
    }
    for (int j = first; j < size; j++) {
        const Tok *tok = &call->vals[j - first];
        PyObject *value;
        if (call->tag == TAG_SQL && tok->type == 0) {
            value = PyUnicode_FromStringAndSize("", 0);
        }
        else {
            value = value_of(&st->src, tok, unset, &st->scratch, rc);
        }
        if (value == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, j, value);
    }
    return key;
}

/* The Python keys of the groups met so far, by their canonical bytes (`call_key`, which they are
 * a function of): the same key is the same tuple from one recording to the next, its items'
 * hashes kept. Module-wide (the GIL guards it), made again for another `unset`, and emptied
 * past MOST_KEYS. */
static Table key_cache;
static PyObject *key_list;  /* the keys, at their index in key_cache */
static PyObject *key_unset; /* the `unset` they were made with */
#define MOST_KEYS 100000

/* `key_of`, cached (a new reference). */
static PyObject *
cached_key(State *st, const Call *call, PyObject *unset, PyObject *sql_tag, int *rc)
{
    *rc = 0;
    if (key_list == NULL || key_unset != unset || key_cache.count >= MOST_KEYS) {
        table_free(&key_cache);
        Py_CLEAR(key_list);
        Py_INCREF(unset);
        Py_XSETREF(key_unset, unset);
        if ((key_list = PyList_New(0)) == NULL) {
            return NULL;
        }
    }
    const unsigned char *bytes = st->keys.p + call->key_off;
    Slot *slot = table_get(&key_cache, bytes, call->key_len, 0, 0, rc);
    if (slot != NULL && slot->value < PyList_GET_SIZE(key_list)) {
        PyObject *key = PyList_GET_ITEM(key_list, slot->value);
        Py_INCREF(key);
        return key;
    }
    if (*rc < 0) {
        return PyErr_NoMemory();
    }
    PyObject *key = key_of(st, call, unset, sql_tag, rc);
    if (key == NULL) {
        return NULL;
    }
    Py_ssize_t index = PyList_GET_SIZE(key_list);
    if (PyList_Append(key_list, key) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    (void)table_get(&key_cache, bytes, call->key_len, 1, index, rc); /* (not kept: no matter) */
    *rc = 0;
    return key;
}

/* The result from a walked state: (sums, others, classmap span) (module doc); None when two
 * groups are one key in Python. */
static PyObject *
result_of(State *st, const Py_ssize_t *class_map, PyObject *unset)
{
    Py_ssize_t count = (Py_ssize_t)(st->groups.len / sizeof(Group));
    PyObject *sums = PyDict_New();
    PyObject *others = PyList_New(0);
    PyObject *sql_tag = PyUnicode_FromStringAndSize("\0sql", 4);
    if (sums == NULL || others == NULL || sql_tag == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Group *group = (Group *)st->groups.p + i;
        Call *call = (Call *)st->calls.p + group->call;
        PyObject *key;
        int rc = 0;
        if (call->tag == TAG_OTHER) {
            /* a placeholder, its group's key here (bytes: every real key is a tuple) */
            key = PyBytes_FromStringAndSize((const char *)st->keys.p + call->key_off,
                                            (Py_ssize_t)call->key_len);
            if (key != NULL && PyList_Append(others, key) < 0) {
                Py_CLEAR(key);
            }
        }
        else {
            key = cached_key(st, call, unset, sql_tag, &rc);
        }
        if (key == NULL) {
            if (rc == BAIL) {
                goto decline;
            }
            goto error;
        }
        PyObject *entry;
        if (call->tag == TAG_FUNCTION) {
            PyObject *chain = named_chain(st, call, &rc);
            if (chain == NULL) {
                Py_DECREF(key);
                goto error;
            }
            entry = Py_BuildValue("[Ld(nn)N]", group->calls, group->seconds, call->start,
                                  call->end, chain);
        }
        else if (call->tag == TAG_SQL) {
            /* named by (sql, database type): `_collect.named_sums`'s key of a raw SQL key */
            PyObject *name = PyTuple_GetSlice(key, 1, 3);
            if (name == NULL) {
                Py_DECREF(key);
                goto error;
            }
            entry = Py_BuildValue("[Ld(nn)N]", group->calls, group->seconds, call->start,
                                  call->end, name);
        }
        else {
            entry = Py_BuildValue("[Ld(nn)]", group->calls, group->seconds, call->start,
                                  call->end);
        }
        if (entry == NULL) {
            Py_DECREF(key);
            goto error;
        }
        PyObject *found = PyDict_SetDefault(sums, key, entry);
        Py_DECREF(key);
        Py_DECREF(entry);
        if (found == NULL) {
            goto error;
        }
        if (found != entry) {
            goto decline; /* two groups here are one key in Python: the Python path sums them */
        }
    }
    Py_DECREF(sql_tag);
    if (class_map[0] < 0) {
        return Py_BuildValue("(NNO)", sums, others, Py_None);
    }
    return Py_BuildValue("(NN(nn))", sums, others, class_map[0], class_map[1]);
decline:
    Py_XDECREF(sql_tag);
    Py_XDECREF(sums);
    Py_XDECREF(others);
    Py_RETURN_NONE;
error:
    Py_XDECREF(sql_tag);
    Py_XDECREF(sums);
    Py_XDECREF(others);
    return NULL;
}

static PyObject *
nested_sums(PyObject *module, PyObject *args)
{
    Py_buffer view;
    long max_depth;
    PyObject *unset;
    (void)module;
    PyObject *chains = Py_None, *namer = Py_None;
    int strict = 0;
    if (!PyArg_ParseTuple(args, "y*lO|OOp:nested_sums", &view, &max_depth, &unset, &chains,
                          &namer, &strict)) {
        return NULL;
    }
    if ((chains != Py_None && !PyDict_Check(chains)) ||
        (namer != Py_None && (chains == Py_None || !PyCallable_Check(namer)))) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "chains must be a dict, namer a callable, or None");
        return NULL;
    }
    State st;
    memset(&st, 0, sizeof(st));
    st.src.s = (const unsigned char *)view.buf;
    st.src.n = view.len;
    st.src.max_depth = max_depth;
    st.src.strict = strict;
    st.chains = chains == Py_None ? NULL : chains;
    st.namer = namer == Py_None ? NULL : namer;
    Py_ssize_t class_map[2];
    PyObject *result;
    int rc = walk(&st, class_map);
    if (rc == 0 && class_map[0] >= 0) {
        int read = class_items(&st, class_map[0], 2, 1, -1, 1);
        if (read == NOMEM) {
            rc = NOMEM;
        }
        st.class_map_read = read >= 0;
    }
    if (rc == NOMEM) {
        result = PyErr_NoMemory();
    }
    else if (rc < 0) {
        result = Py_None;
        Py_INCREF(result);
    }
    else {
        result = result_of(&st, class_map, unset);
    }
    state_free(&st);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ call-tree links
 *
 * `tree_links(events)`: `tracetool.trace.tree.tree_links` of a list of dict events, the same
 * list of ints (the position of each event's tree root, of the call a return names, or -1),
 * for `inspect`'s choice of the call trees holding a match. Call ids and threads are keys of
 * real dicts, so they are equal, hashed and refused (an unhashable one: TypeError) as there.
 * None when an event is not a dict (the caller then runs the Python function). And
 * `trees_holding(events, calls)`, which keeps the events of the trees holding some calls. */

typedef struct {
    Py_ssize_t pos, root;
    Py_ssize_t thread; /* its stack (index in `stacks`) */
    int open;
} Link;

typedef struct {
    Py_ssize_t *items; /* Link indices */
    Py_ssize_t len, cap;
} Stack;

static int
stack_push(Stack *st, Py_ssize_t value)
{
    if (st->len == st->cap) {
        Py_ssize_t cap = st->cap ? st->cap * 2 : 16;
        Py_ssize_t *items = PyMem_Realloc(st->items, (size_t)cap * sizeof(Py_ssize_t));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        st->items = items;
        st->cap = cap;
    }
    st->items[st->len++] = value;
    return 0;
}

/* The index (in *stacks) of the stack of `thread` in `threads`, added when new; -1 with an
 * exception. `add` 0: -2 when it has none. */
static Py_ssize_t
stack_of(PyObject *threads, PyObject *thread, Buf *stacks, int add)
{
    PyObject *found = PyDict_GetItemWithError(threads, thread);
    if (found != NULL) {
        return PyLong_AsSsize_t(found);
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    if (!add) {
        return -2;
    }
    Py_ssize_t index = (Py_ssize_t)(stacks->len / sizeof(Stack));
    Stack empty = {NULL, 0, 0};
    PyObject *boxed = PyLong_FromSsize_t(index);
    if (boxed == NULL) {
        return -1;
    }
    int rc = PyDict_SetItem(threads, thread, boxed);
    Py_DECREF(boxed);
    if (rc < 0) {
        return -1;
    }
    if (buf_put(stacks, &empty, sizeof(empty)) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return index;
}

/* The links of a list of dicts into `out` (a PyMem array of its length): 0; 1 when an event
 * is not a dict; -1 with an exception. */
static int
links_of(PyObject *events, Py_ssize_t *out)
{
    Py_ssize_t count = PyList_GET_SIZE(events);
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!PyDict_Check(PyList_GET_ITEM(events, i))) {
            return 1;
        }
    }
    static PyObject *k_event, *k_thread, *k_id, *k_parent, *k_call, *k_return;
    if (k_event == NULL) {
        k_event = PyUnicode_InternFromString("event");
        k_thread = PyUnicode_InternFromString("thread_id");
        k_id = PyUnicode_InternFromString("id");
        k_parent = PyUnicode_InternFromString("parent_id");
        k_call = PyUnicode_InternFromString("call");
        k_return = PyUnicode_InternFromString("return");
        if (!k_event || !k_thread || !k_id || !k_parent || !k_call || !k_return) {
            Py_CLEAR(k_event);
            return -1;
        }
    }
    int rc = -1;
    PyObject *calls = PyDict_New();   /* call id -> its Link index */
    PyObject *threads = PyDict_New(); /* thread -> its Stack index */
    Buf records = {NULL, 0, 0}, stacks = {NULL, 0, 0};
    if (calls == NULL || threads == NULL) {
        goto done;
    }
    for (Py_ssize_t pos = 0; pos < count; pos++) {
        PyObject *event = PyList_GET_ITEM(events, pos);
        PyObject *kind = PyDict_GetItemWithError(event, k_event);
        if (kind == NULL && PyErr_Occurred()) {
            goto done;
        }
        int is_call = 0, is_return = 0;
        if (kind != NULL && PyUnicode_CheckExact(kind)) {
            is_call = kind == k_call || PyUnicode_Compare(kind, k_call) == 0;
            is_return = !is_call && (kind == k_return || PyUnicode_Compare(kind, k_return) == 0);
        }
        out[pos] = -1;
        if (is_call) {
            PyObject *thread = PyDict_GetItemWithError(event, k_thread);
            if (thread == NULL && PyErr_Occurred()) {
                goto done;
            }
            Py_ssize_t at = stack_of(threads, thread ? thread : Py_None, &stacks, 1);
            if (at < 0) {
                goto done;
            }
            Stack *stack = (Stack *)stacks.p + at;
            Link record = {pos, pos, at, 1};
            if (stack->len > 0) {
                record.root = ((Link *)records.p)[stack->items[stack->len - 1]].root;
            }
            Py_ssize_t index = (Py_ssize_t)(records.len / sizeof(Link));
            if (buf_put(&records, &record, sizeof(record)) < 0) {
                PyErr_NoMemory();
                goto done;
            }
            if (stack_push(stack, index) < 0) {
                goto done;
            }
            PyObject *id = PyDict_GetItemWithError(event, k_id);
            if (id == NULL && PyErr_Occurred()) {
                goto done;
            }
            PyObject *boxed = PyLong_FromSsize_t(index);
            if (boxed == NULL) {
                goto done;
            }
            int set = PyDict_SetItem(calls, id ? id : Py_None, boxed);
            Py_DECREF(boxed);
            if (set < 0) {
                goto done;
            }
            out[pos] = record.root;
        }
        else if (is_return) {
            PyObject *parent = PyDict_GetItemWithError(event, k_parent);
            if (parent == NULL && PyErr_Occurred()) {
                goto done;
            }
            Py_ssize_t target, at;
            if (parent == NULL || parent == Py_None) {
                PyObject *thread = PyDict_GetItemWithError(event, k_thread);
                if (thread == NULL && PyErr_Occurred()) {
                    goto done;
                }
                at = stack_of(threads, thread ? thread : Py_None, &stacks, 0);
                if (at == -1) {
                    goto done;
                }
                if (at == -2 || ((Stack *)stacks.p)[at].len == 0) {
                    continue;
                }
                Stack *stack = (Stack *)stacks.p + at;
                target = stack->items[stack->len - 1];
            }
            else {
                PyObject *found = PyDict_GetItemWithError(calls, parent);
                if (found == NULL) {
                    if (PyErr_Occurred()) {
                        goto done;
                    }
                    continue;
                }
                target = PyLong_AsSsize_t(found);
                at = ((Link *)records.p)[target].thread;
            }
            Link *record = (Link *)records.p + target;
            out[pos] = record->pos;
            if (record->open) {
                Stack *stack = (Stack *)stacks.p + at;
                while (stack->len > 0) {
                    Py_ssize_t popped = stack->items[--stack->len];
                    ((Link *)records.p)[popped].open = 0;
                    if (popped == target) {
                        break;
                    }
                }
            }
        }
    }
    rc = 0;
done:
    for (size_t i = 0; i < stacks.len / sizeof(Stack); i++) {
        PyMem_Free(((Stack *)stacks.p)[i].items);
    }
    PyMem_Free(stacks.p);
    PyMem_Free(records.p);
    Py_XDECREF(calls);
    Py_XDECREF(threads);
    return rc;
}

/* A copy of a list argument (hashing an id could run code that changes the caller's list) and
 * its links: the copy, or NULL with an exception or (*declined) an event that is not a dict. */
static PyObject *
linked_copy(PyObject *arg, Py_ssize_t **links, int *declined)
{
    *links = NULL;
    *declined = 0;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "events must be a list");
        return NULL;
    }
    PyObject *events = PyList_GetSlice(arg, 0, PyList_GET_SIZE(arg));
    if (events == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(events);
    *links = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(Py_ssize_t));
    if (*links == NULL) {
        Py_DECREF(events);
        PyErr_NoMemory();
        return NULL;
    }
    int rc = links_of(events, *links);
    if (rc != 0) {
        PyMem_Free(*links);
        *links = NULL;
        Py_DECREF(events);
        *declined = rc == 1;
        return NULL;
    }
    return events;
}

static PyObject *
tree_links(PyObject *module, PyObject *arg)
{
    (void)module;
    Py_ssize_t *links;
    int declined;
    PyObject *events = linked_copy(arg, &links, &declined);
    if (events == NULL) {
        if (declined) {
            Py_RETURN_NONE;
        }
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(events);
    PyObject *out = PyList_New(count);
    for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
        PyObject *value = PyLong_FromSsize_t(links[i]);
        if (value == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, value);
    }
    PyMem_Free(links);
    Py_DECREF(events);
    return out;
}

/* `trees_holding(events, calls)`: `tracetool.inspect.scan._trees_holding` — the events of the
 * call trees holding these calls (positions of call events in `events`) and the calls'
 * positions among them, or (events, calls) themselves when that is every event; None when an
 * event is not a dict. */
static PyObject *
trees_holding(PyObject *module, PyObject *args)
{
    PyObject *arg, *calls;
    (void)module;
    if (!PyArg_ParseTuple(args, "OO!:trees_holding", &arg, &PyList_Type, &calls)) {
        return NULL;
    }
    Py_ssize_t *links;
    int declined;
    PyObject *events = linked_copy(arg, &links, &declined);
    if (events == NULL) {
        if (declined) {
            Py_RETURN_NONE;
        }
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(events), ncalls = PyList_GET_SIZE(calls), kept = 0;
    PyObject *result = NULL, *chosen = NULL, *positions = NULL;
    /* wanted[p]: p is the root of a tree holding a call; then before[p]: kept events before p */
    unsigned char *wanted = PyMem_Calloc((size_t)(count > 0 ? count : 1), 1);
    Py_ssize_t *before = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(Py_ssize_t));
    if (wanted == NULL || before == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ncalls; i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyList_GET_ITEM(calls, i));
        if (at == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (at < 0 || at >= count || links[at] < 0) {
            PyErr_SetString(PyExc_ValueError, "a call position out of range or not a call");
            goto done;
        }
        wanted[links[at]] = 1;
    }
    for (Py_ssize_t p = 0; p < count; p++) {
        before[p] = kept;
        if (links[p] >= 0 && wanted[links[links[p]]]) {
            kept++;
        }
    }
    if (kept == count) {
        result = Py_BuildValue("(OO)", arg, calls);
        goto done;
    }
    chosen = PyList_New(kept);
    positions = PyList_New(ncalls);
    if (chosen == NULL || positions == NULL) {
        goto done;
    }
    for (Py_ssize_t p = 0, n = 0; p < count; p++) {
        if (links[p] >= 0 && wanted[links[links[p]]]) {
            PyObject *event = PyList_GET_ITEM(events, p);
            Py_INCREF(event);
            PyList_SET_ITEM(chosen, n++, event);
        }
    }
    for (Py_ssize_t i = 0; i < ncalls; i++) {
        PyObject *at = PyLong_FromSsize_t(before[PyLong_AsSsize_t(PyList_GET_ITEM(calls, i))]);
        if (at == NULL) {
            goto done;
        }
        PyList_SET_ITEM(positions, i, at);
    }
    result = PyTuple_Pack(2, chosen, positions);
done:
    Py_XDECREF(chosen);
    Py_XDECREF(positions);
    PyMem_Free(wanted);
    PyMem_Free(before);
    PyMem_Free(links);
    Py_DECREF(events);
    return result;
}

/* `screen_calls(events, last, loose)`: `tracetool.inspect.matching.Matcher.screen` of a
 * function — the positions of the call events whose `method_id` (read as `str`, "" when
 * missing) holds `last`, or whose `loose(method_id)` is empty — for a list of dicts; None when
 * an event is not a dict. */
static PyObject *
screen_calls(PyObject *module, PyObject *args)
{
    PyObject *events, *last, *loose;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!UO:screen_calls", &PyList_Type, &events, &last, &loose)) {
        return NULL;
    }
    static PyObject *k_event, *k_method, *k_call;
    if (k_event == NULL) {
        k_event = PyUnicode_InternFromString("event");
        k_method = PyUnicode_InternFromString("method_id");
        k_call = PyUnicode_InternFromString("call");
        if (!k_event || !k_method || !k_call) {
            Py_CLEAR(k_event);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        if (!PyDict_Check(PyList_GET_ITEM(events, i))) {
            Py_RETURN_NONE;
        }
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    /* (`loose` is Python: the list is read again at each position, its events held) */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (!PyDict_Check(event)) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        Py_INCREF(event);
        PyObject *kind = PyDict_GetItemWithError(event, k_event);
        int keep = 0;
        if (kind != NULL && PyUnicode_CheckExact(kind) &&
            (kind == k_call || PyUnicode_Compare(kind, k_call) == 0)) {
            PyObject *method = PyDict_GetItemWithError(event, k_method);
            PyObject *name = NULL;
            if (method != NULL) {
                name = PyObject_Str(method);
            }
            else if (!PyErr_Occurred()) {
                name = PyUnicode_FromStringAndSize("", 0);
            }
            if (name != NULL) {
                keep = PyUnicode_Contains(name, last);
                if (keep == 0) {
                    PyObject *loosened = PyObject_CallOneArg(loose, name);
                    if (loosened == NULL) {
                        keep = -1;
                    }
                    else {
                        keep = PyObject_IsTrue(loosened);
                        keep = keep < 0 ? -1 : !keep;
                        Py_DECREF(loosened);
                    }
                }
                Py_DECREF(name);
            }
            else {
                keep = -1;
            }
        }
        else if (kind == NULL && PyErr_Occurred()) {
            keep = -1;
        }
        Py_DECREF(event);
        if (keep < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (keep) {
            PyObject *at = PyLong_FromSsize_t(i);
            if (at == NULL || PyList_Append(out, at) < 0) {
                Py_XDECREF(at);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(at);
        }
    }
    return out;
}

/* ------------------------------------------------------------------ call trees */

static PyObject *
slot_get(PyObject *descr, PyObject *node)
{
    return Py_TYPE(descr)->tp_descr_get(descr, node, (PyObject *)Py_TYPE(node));
}

static int
slot_set(PyObject *descr, PyObject *node, PyObject *value)
{
    return Py_TYPE(descr)->tp_descr_set(descr, node, value);
}

/* `tree_walk(node_type, roots, release)`: `tracetool.trace.tree.preorder(roots)`, every node
 * below the roots (included) in pre-order, as a list; with `release`, `tree.release(roots)`
 * instead (each node's parent None and children a new empty list; None returned). */
static PyObject *
tree_walk(PyObject *module, PyObject *args)
{
    PyObject *type_obj, *roots_arg;
    int release;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!Op:tree_walk", &PyType_Type, &type_obj, &roots_arg,
                          &release)) {
        return NULL;
    }
    PyObject *children_d = PyObject_GetAttrString(type_obj, "children");
    PyObject *parent_d = PyObject_GetAttrString(type_obj, "parent");
    PyObject *roots = PySequence_Fast(roots_arg, "roots must be a sequence");
    PyObject *out = release ? NULL : PyList_New(0);
    Buf stack = {NULL, 0, 0}; /* PyObject* (strong references) */
    PyObject *result = NULL;
    if (children_d == NULL || parent_d == NULL || roots == NULL || (!release && out == NULL)) {
        goto done;
    }
    if (Py_TYPE(children_d)->tp_descr_get == NULL || Py_TYPE(children_d)->tp_descr_set == NULL ||
        Py_TYPE(parent_d)->tp_descr_set == NULL) {
        PyErr_SetString(PyExc_TypeError, "children and parent are not slots");
        goto done;
    }
    for (Py_ssize_t i = PySequence_Fast_GET_SIZE(roots) - 1; i >= 0; i--) {
        PyObject *root = PySequence_Fast_GET_ITEM(roots, i);
        Py_INCREF(root);
        if (buf_put(&stack, &root, sizeof(root)) < 0) {
            Py_DECREF(root);
            PyErr_NoMemory();
            goto done;
        }
    }
    while (stack.len > 0) {
        PyObject *node;
        stack.len -= sizeof(node);
        memcpy(&node, stack.p + stack.len, sizeof(node));
        int rc = out != NULL ? PyList_Append(out, node) : 0;
        PyObject *children = rc == 0 ? slot_get(children_d, node) : NULL;
        if (children != NULL) {
            PyObject *items = PySequence_Fast(children, "children must be a sequence");
            Py_DECREF(children);
            if (items == NULL) {
                rc = -1;
            }
            else {
                for (Py_ssize_t i = PySequence_Fast_GET_SIZE(items) - 1; rc == 0 && i >= 0; i--) {
                    PyObject *child = PySequence_Fast_GET_ITEM(items, i);
                    Py_INCREF(child);
                    if (buf_put(&stack, &child, sizeof(child)) < 0) {
                        Py_DECREF(child);
                        PyErr_NoMemory();
                        rc = -1;
                    }
                }
                Py_DECREF(items);
            }
        }
        else {
            rc = -1;
        }
        if (rc == 0 && release) {
            PyObject *empty = PyList_New(0);
            if (empty == NULL || slot_set(parent_d, node, Py_None) < 0 ||
                slot_set(children_d, node, empty) < 0) {
                rc = -1;
            }
            Py_XDECREF(empty);
        }
        Py_DECREF(node);
        if (rc < 0) {
            goto done;
        }
    }
    result = release ? Py_None : out;
    Py_INCREF(result);
done:
    while (stack.len > 0) {
        PyObject *node;
        stack.len -= sizeof(node);
        memcpy(&node, stack.p + stack.len, sizeof(node));
        Py_DECREF(node);
    }
    PyMem_Free(stack.p);
    Py_XDECREF(out);
    Py_XDECREF(roots);
    Py_XDECREF(children_d);
    Py_XDECREF(parent_d);
    return result;
}

/* ------------------------------------------------------------------ classMap
 *
 * `class_map(roots, by_location, children, data, object_type, extra_keys)`:
 * `tracetool.trace.codeobjects.ClassMap.from_json(data)` (a list) into a fresh ClassMap's
 * `roots`, `by_location` and `_children`, its `CodeObject`s (`object_type`) made with their
 * slots set through their descriptors: the same objects, keys, labels and extras, in the same
 * order, for `inspect`. */

enum { CO_FQID, CO_ID, CO_CHILDREN, CO_EXTRA, CO_LABELS, CO_LOCATION, CO_NAME, CO_PARENT,
       CO_STATIC, CO_TYPE, CO_COUNT };
static const char *const CO_SLOTS[CO_COUNT] = {"_fqid", "_id", "children", "extra", "labels",
                                              "location", "name", "parent", "static", "type"};

/* `_labels(value)`: a new list. */
static PyObject *
labels_of(PyObject *value)
{
    if (value != NULL && PyList_Check(value)) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        PyObject *out = PyList_New(0);
        for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(value) && i < n; i++) {
            PyObject *text = PyObject_Str(PyList_GET_ITEM(value, i));
            if (text == NULL || PyList_Append(out, text) < 0) {
                Py_XDECREF(text);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(text);
        }
        return out;
    }
    if (value != NULL && PyUnicode_Check(value)) {
        PyObject *out = PyList_New(1);
        if (out != NULL) {
            Py_INCREF(value);
            PyList_SET_ITEM(out, 0, value);
        }
        return out;
    }
    return PyList_New(0);
}

/* sorted(set(a) | set(b)) (b may be NULL) */
static PyObject *
sorted_union(PyObject *a, PyObject *b)
{
    PyObject *set = PySet_New(a);
    if (set == NULL) {
        return NULL;
    }
    if (b != NULL) {
        PyObject *other = PySet_New(b);
        PyObject *both = other == NULL ? NULL : PyNumber_InPlaceOr(set, other);
        Py_XDECREF(other);
        if (both == NULL) {
            Py_DECREF(set);
            return NULL;
        }
        Py_DECREF(both); /* (set itself) */
    }
    PyObject *out = PySequence_List(set);
    Py_DECREF(set);
    if (out != NULL && PyList_Sort(out) < 0) {
        Py_CLEAR(out);
    }
    return out;
}

static PyObject *
class_map(PyObject *module, PyObject *args)
{
    PyObject *roots, *by_location, *made, *data, *type_obj, *extra_keys;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!:class_map", &PyList_Type, &roots, &PyDict_Type,
                          &by_location, &PyDict_Type, &made, &PyList_Type, &data, &PyType_Type,
                          &type_obj, &PyTuple_Type, &extra_keys)) {
        return NULL;
    }
    static PyObject *k_type, *k_name, *k_location, *k_static, *k_labels, *k_children, *package,
        *function, *empty, *nul;
    if (k_type == NULL) {
        k_type = PyUnicode_InternFromString("type");
        k_name = PyUnicode_InternFromString("name");
        k_location = PyUnicode_InternFromString("location");
        k_static = PyUnicode_InternFromString("static");
        k_labels = PyUnicode_InternFromString("labels");
        k_children = PyUnicode_InternFromString("children");
        package = PyUnicode_InternFromString("package");
        function = PyUnicode_InternFromString("function");
        empty = PyUnicode_InternFromString("");
        nul = PyUnicode_FromStringAndSize("\0", 1);
        if (!k_type || !k_name || !k_location || !k_static || !k_labels || !k_children ||
            !package || !function || !empty || !nul) {
            Py_CLEAR(k_type);
            return NULL;
        }
    }
    PyTypeObject *type = (PyTypeObject *)type_obj;
    PyObject *slot[CO_COUNT] = {NULL};
    Buf stack = {NULL, 0, 0}; /* (item, parent) pairs, strong references */
    PyObject *result = NULL;
    for (int i = 0; i < CO_COUNT; i++) {
        slot[i] = PyObject_GetAttrString(type_obj, CO_SLOTS[i]);
        if (slot[i] == NULL) {
            goto done;
        }
        if (Py_TYPE(slot[i])->tp_descr_get == NULL || Py_TYPE(slot[i])->tp_descr_set == NULL) {
            PyErr_Format(PyExc_TypeError, "%s is not a slot", CO_SLOTS[i]);
            goto done;
        }
    }
    for (Py_ssize_t i = PyList_GET_SIZE(data) - 1; i >= 0; i--) {
        PyObject *pair[2] = {PyList_GET_ITEM(data, i), Py_None};
        Py_INCREF(pair[0]);
        Py_INCREF(pair[1]);
        if (buf_put(&stack, pair, sizeof(pair)) < 0) {
            Py_DECREF(pair[0]);
            Py_DECREF(pair[1]);
            PyErr_NoMemory();
            goto done;
        }
    }
    while (stack.len > 0) {
        PyObject *pair[2];
        pop_pair(&stack, pair);
        PyObject *item = pair[0], *parent = pair[1];
        PyObject *kind = NULL, *name = NULL, *labels = NULL, *key = NULL, *obj = NULL;
        PyObject *location;
        int is_static, rc = -1;
        if (!PyDict_Check(item)) {
            rc = 0;
            goto next;
        }
        /* str(get("type") or "package"), str(get("name", "")), get("location"),
         * bool(get("static", False)), _labels(get("labels")) */
        PyObject *value = PyDict_GetItemWithError(item, k_type);
        int truthy = value == NULL ? 0 : PyObject_IsTrue(value);
        if ((value == NULL && PyErr_Occurred()) || truthy < 0) {
            goto next;
        }
        kind = truthy ? PyObject_Str(value) : (Py_INCREF(package), package);
        value = PyDict_GetItemWithError(item, k_name);
        if (kind == NULL || (value == NULL && PyErr_Occurred())) {
            goto next;
        }
        name = value == NULL ? (Py_INCREF(empty), empty) : PyObject_Str(value);
        location = PyDict_GetItemWithError(item, k_location);
        if (name == NULL || (location == NULL && PyErr_Occurred())) {
            goto next;
        }
        location = location == NULL ? Py_None : location;
        value = PyDict_GetItemWithError(item, k_static);
        if (value == NULL && PyErr_Occurred()) {
            goto next;
        }
        is_static = value == NULL ? 0 : PyObject_IsTrue(value);
        if (is_static < 0) {
            goto next;
        }
        value = PyDict_GetItemWithError(item, k_labels);
        if (value == NULL && PyErr_Occurred()) {
            goto next;
        }
        labels = labels_of(value);
        if (labels == NULL) {
            goto next;
        }
        /* child(): key (id(parent), type, name or f"{name}\0{static}\0{location}") */
        int is_function = PyUnicode_Compare(kind, function) == 0;
        PyObject *ident = PyLong_FromVoidPtr(parent);
        PyObject *third = NULL;
        if (is_function) {
            PyObject *where = PyObject_Format(location, empty);
            PyObject *parts = where == NULL ? NULL
                                            : PyTuple_Pack(5, name, nul,
                                                           is_static ? Py_True : Py_False, nul,
                                                           where);
            Py_XDECREF(where);
            if (parts != NULL) {
                /* (f-string pieces: str of each; "True"/"False" for the flag) */
                PyObject *texts = PyList_New(5);
                for (int i = 0; texts != NULL && i < 5; i++) {
                    PyObject *piece = PyObject_Str(PyTuple_GET_ITEM(parts, i));
                    if (piece == NULL) {
                        Py_CLEAR(texts);
                        break;
                    }
                    PyList_SET_ITEM(texts, i, piece);
                }
                if (texts != NULL) {
                    third = PyUnicode_Join(empty, texts);
                    Py_DECREF(texts);
                }
                Py_DECREF(parts);
            }
        }
        else {
            third = name;
            Py_INCREF(third);
        }
        if (ident != NULL && third != NULL) {
            key = PyTuple_Pack(3, ident, kind, third);
        }
        Py_XDECREF(ident);
        Py_XDECREF(third);
        if (key == NULL) {
            goto next;
        }
        PyObject *existing = PyDict_GetItemWithError(made, key);
        if (existing != NULL) {
            obj = existing;
            Py_INCREF(obj);
            if (PyList_GET_SIZE(labels) > 0) {
                PyObject *old = slot_get(slot[CO_LABELS], obj);
                PyObject *merged = old == NULL ? NULL : sorted_union(old, labels);
                Py_XDECREF(old);
                if (merged == NULL || slot_set(slot[CO_LABELS], obj, merged) < 0) {
                    Py_XDECREF(merged);
                    goto next;
                }
                Py_DECREF(merged);
            }
        }
        else {
            if (PyErr_Occurred()) {
                goto next;
            }
            obj = type->tp_alloc(type, 0);
            if (obj == NULL) {
                goto next;
            }
            PyObject *sorted = PyList_GET_SIZE(labels) > 0 ? sorted_union(labels, NULL)
                                                           : PyList_New(0);
            PyObject *kids = PyList_New(0), *extra = PyDict_New();
            int ok = sorted != NULL && kids != NULL && extra != NULL &&
                     slot_set(slot[CO_TYPE], obj, kind) == 0 &&
                     slot_set(slot[CO_NAME], obj, name) == 0 &&
                     slot_set(slot[CO_PARENT], obj, parent) == 0 &&
                     slot_set(slot[CO_CHILDREN], obj, kids) == 0 &&
                     slot_set(slot[CO_LOCATION], obj, location) == 0 &&
                     slot_set(slot[CO_STATIC], obj, is_static ? Py_True : Py_False) == 0 &&
                     slot_set(slot[CO_LABELS], obj, sorted) == 0 &&
                     slot_set(slot[CO_EXTRA], obj, extra) == 0 &&
                     slot_set(slot[CO_ID], obj, Py_None) == 0 &&
                     slot_set(slot[CO_FQID], obj, Py_None) == 0;
            Py_XDECREF(sorted);
            Py_XDECREF(kids);
            Py_XDECREF(extra);
            if (!ok || PyDict_SetItem(made, key, obj) < 0) {
                goto next;
            }
            if (parent == Py_None) {
                ok = PyList_Append(roots, obj) == 0;
            }
            else {
                PyObject *siblings = slot_get(slot[CO_CHILDREN], parent);
                ok = siblings != NULL && PyList_Append(siblings, obj) == 0;
                Py_XDECREF(siblings);
            }
            if (!ok) {
                goto next;
            }
            int located = location == Py_None ? 0 : PyObject_IsTrue(location);
            if (located < 0) {
                goto next;
            }
            if (is_function && located) {
                PyObject *text = PyObject_Str(location);
                PyObject *list = NULL;
                if (text != NULL) {
                    list = PyDict_GetItemWithError(by_location, text);
                    if (list == NULL && !PyErr_Occurred()) {
                        PyObject *fresh = PyList_New(0);
                        if (fresh != NULL && PyDict_SetItem(by_location, text, fresh) == 0) {
                            list = fresh;
                        }
                        Py_XDECREF(fresh);
                    }
                }
                Py_XDECREF(text);
                if (list == NULL || PyList_Append(list, obj) < 0) {
                    goto next;
                }
            }
        }
        /* for extra in _EXTRA_KEYS: if extra in item: obj.extra[extra] = item[extra] */
        PyObject *extra = slot_get(slot[CO_EXTRA], obj);
        if (extra == NULL) {
            goto next;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(extra_keys); i++) {
            PyObject *k = PyTuple_GET_ITEM(extra_keys, i);
            PyObject *v = PyDict_GetItemWithError(item, k);
            if (v == NULL && PyErr_Occurred()) {
                Py_DECREF(extra);
                goto next;
            }
            if (v != NULL && PyObject_SetItem(extra, k, v) < 0) {
                Py_DECREF(extra);
                goto next;
            }
        }
        Py_DECREF(extra);
        /* children = get("children"): a list's items pushed, in reverse */
        PyObject *children = PyDict_GetItemWithError(item, k_children);
        if (children == NULL && PyErr_Occurred()) {
            goto next;
        }
        if (children != NULL && PyList_Check(children)) {
            rc = 0;
            for (Py_ssize_t i = PyList_GET_SIZE(children) - 1; rc == 0 && i >= 0; i--) {
                PyObject *push[2] = {PyList_GET_ITEM(children, i), obj};
                Py_INCREF(push[0]);
                Py_INCREF(push[1]);
                if (buf_put(&stack, push, sizeof(push)) < 0) {
                    Py_DECREF(push[0]);
                    Py_DECREF(push[1]);
                    PyErr_NoMemory();
                    rc = -1;
                }
            }
            goto next;
        }
        rc = 0;
    next:
        Py_XDECREF(kind);
        Py_XDECREF(name);
        Py_XDECREF(labels);
        Py_XDECREF(key);
        Py_XDECREF(obj);
        Py_DECREF(item);
        Py_DECREF(parent);
        if (rc < 0) {
            goto done;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free_pairs(&stack);
    for (int i = 0; i < CO_COUNT; i++) {
        Py_XDECREF(slot[i]);
    }
    return result;
}

/* ------------------------------------------------------------------ batch sums
 *
 * `add_named(batch, raw_sums)`: `OverheadPartial.add_recording(named_sums(raw_sums, ...))` of
 * `nested_sums`' sums when every entry is named already (its fourth item: the C's name of a
 * function, SQL's (sql, database type), the name `_scan` gave an HTTP call): the entries'
 * calls and seconds summed per name in order (as `named_sums` adds them), then each name's
 * count added to the batch's and its seconds appended to its list (`batch`: name -> [calls,
 * [seconds of each recording]]). False, and the batch untouched, when an entry is not named or
 * not of that shape: the caller names them in Python. */

static PyObject *
add_named(PyObject *module, PyObject *args)
{
    PyObject *batch, *raw_sums;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!:add_named", &PyDict_Type, &batch, &PyDict_Type,
                          &raw_sums)) {
        return NULL;
    }
    Py_ssize_t count = PyDict_GET_SIZE(raw_sums);
    PyObject *names = PyDict_New(); /* name -> its index in `sums` */
    typedef struct {
        PyObject *name; /* (borrowed: raw_sums holds it) */
        long long calls;
        double seconds;
    } Sum;
    Sum *sums = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(Sum));
    Py_ssize_t distinct = 0;
    PyObject *result = NULL;
    if (names == NULL || sums == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    PyObject *key, *entry;
    while (PyDict_Next(raw_sums, &at, &key, &entry)) {
        if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) < 4) {
            result = Py_False;
            goto done;
        }
        PyObject *calls = PyList_GET_ITEM(entry, 0), *seconds = PyList_GET_ITEM(entry, 1);
        PyObject *name = PyList_GET_ITEM(entry, 3);
        if (name == Py_None || !PyLong_CheckExact(calls) || !PyFloat_CheckExact(seconds) ||
            !(PyUnicode_CheckExact(name) || PyTuple_CheckExact(name))) {
            result = Py_False;
            goto done;
        }
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(calls, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            result = Py_False;
            goto done;
        }
        PyObject *found = PyDict_GetItemWithError(names, name);
        if (found == NULL) {
            if (PyErr_Occurred()) {
                goto done;
            }
            PyObject *index = PyLong_FromSsize_t(distinct);
            if (index == NULL || PyDict_SetItem(names, name, index) < 0) {
                Py_XDECREF(index);
                goto done;
            }
            Py_DECREF(index);
            sums[distinct].name = name;
            sums[distinct].calls = n;
            sums[distinct].seconds = PyFloat_AS_DOUBLE(seconds);
            distinct++;
        }
        else {
            Sum *sum = sums + PyLong_AsSsize_t(found);
            if ((n > 0 && sum->calls > LLONG_MAX - n) || (n < 0 && sum->calls < LLONG_MIN - n)) {
                result = Py_False;
                goto done;
            }
            sum->calls += n;
            sum->seconds += PyFloat_AS_DOUBLE(seconds);
        }
    }
    /* every entry read: now the batch (only a lack of memory can stop this half way) */
    for (Py_ssize_t i = 0; i < distinct; i++) {
        PyObject *calls = PyLong_FromLongLong(sums[i].calls);
        PyObject *seconds = PyFloat_FromDouble(sums[i].seconds);
        if (calls == NULL || seconds == NULL) {
            Py_XDECREF(calls);
            Py_XDECREF(seconds);
            goto done;
        }
        PyObject *held = PyDict_GetItemWithError(batch, sums[i].name);
        if (held == NULL) {
            PyObject *parts = NULL, *value = NULL;
            if (!PyErr_Occurred() && (parts = PyList_New(1)) != NULL) {
                PyList_SET_ITEM(parts, 0, seconds);
                seconds = NULL;
                value = PyList_New(2);
            }
            if (value == NULL) {
                Py_XDECREF(parts);
                Py_XDECREF(seconds);
                Py_DECREF(calls);
                goto done;
            }
            PyList_SET_ITEM(value, 0, calls);
            PyList_SET_ITEM(value, 1, parts);
            int rc = PyDict_SetItem(batch, sums[i].name, value);
            Py_DECREF(value);
            if (rc < 0) {
                goto done;
            }
            continue;
        }
        /* [calls, [seconds...]]: held[0] += calls; held[1].append(seconds) */
        if (!PyList_CheckExact(held) || PyList_GET_SIZE(held) != 2 ||
            !PyList_CheckExact(PyList_GET_ITEM(held, 1))) {
            PyErr_SetString(PyExc_TypeError, "a batch entry is not [calls, [seconds]]");
            Py_DECREF(calls);
            Py_DECREF(seconds);
            goto done;
        }
        PyObject *total = PyNumber_Add(PyList_GET_ITEM(held, 0), calls);
        Py_DECREF(calls);
        if (total == NULL) {
            Py_DECREF(seconds);
            goto done;
        }
        PyList_SetItem(held, 0, total); /* (steals total) */
        int rc = PyList_Append(PyList_GET_ITEM(held, 1), seconds);
        Py_DECREF(seconds);
        if (rc < 0) {
            goto done;
        }
    }
    result = Py_True;
done:
    Py_XDECREF(names);
    PyMem_Free(sums);
    Py_XINCREF(result);
    return result;
}

/* _speedups_diagram.c: the walk of tracetool.diagram.builder.actions_of */
PyObject *tt_diagram_actions(PyObject *self, PyObject *args);
PyObject *tt_call_tree(PyObject *self, PyObject *args);
PyObject *tt_preorder_calls(PyObject *self, PyObject *args);
PyObject *tt_tree_facts(PyObject *self, PyObject *args);
PyObject *tt_bind_heads(PyObject *self, PyObject *args);
PyObject *tt_fold_loops(PyObject *self, PyObject *args);
PyObject *tt_uml_lines(PyObject *self, PyObject *args);
PyObject *tt_subtree_digests(PyObject *self, PyObject *args);
PyObject *tt_diagram_digests(PyObject *self, PyObject *args);
PyObject *tt_sql_premask(PyObject *self, PyObject *sql);
PyObject *tt_sql_keywords_upper(PyObject *self, PyObject *args);
/* _speedups_extract.c: the walk of tracetool.index.extract.Extractor._walk */
PyObject *tt_extract_walk(PyObject *self, PyObject *args);
PyObject *tt_overhead_pairs(PyObject *self, PyObject *args);
PyObject *tt_overhead_names(PyObject *self, PyObject *args);
/* _speedups_json.c: a diagram's actions as sequence.json text */
PyObject *tt_actions_json(PyObject *self, PyObject *args);
/* _speedups_arena.c: pymalloc's arenas faulted in ahead of use */
PyObject *tt_fault_ahead(PyObject *self, PyObject *args);

/* ------------------------------------------------------------------ huge-number pre-check
 *
 * `huge_number_risk(buffer)`: `tracetool.trace.checks.maybe_huge_number` of a whole text, with
 * the GIL released, so a reader may run it in a thread beside a decode that holds the GIL.
 * The same classes (`_NUMBER_CLASSES`: digit `0`, `e`/`E` `e`, `.` and `-` kept, `:` for
 * `:,[]{}` and white space, `x` for the rest, `+` dropped) and the same two tests on them: a
 * run of 309 digits; an `e` followed by three or more digits and then a separator or the end,
 * whose preceding run of `0.-` is not empty and starts the text or follows a separator. The
 * Python function reads texts over 8 MB in overlapping 1 MB pieces, whose edges can only add
 * alarms; this reads the text whole, as the Python function does up to 8 MB.
 *
 * The exact rule (`hn_exact`, a byte at a time) runs only near what could raise an alarm; the
 * rest is skipped 16 bytes at a time (`hn_window`, SSE2; a byte at a time elsewhere). A window
 * needs the exact rule when it holds a `+` (dropped: it may join what the window test sees
 * apart), is all digits, or holds an `e`/`E` between a `0`, `.` or `-` and a digit. Why that
 * misses nothing: an `x`-class byte resets the rule's state, and the text of a suspicious
 * number (its separator, `0.-` run, `e`, exponent, closing separator; or its 309 digits) holds
 * none. So the exact rule, started at the last `x` before a suspicious window (or where it last
 * stopped, with the state it had there) and run until the first `x` past the window, reads all
 * of any number that window touches; and every suspicious number leaves a suspicious window:
 * 309 digits hold a whole window (all digits, or with a `+`), and the `e` of an exponent is
 * in a window with its neighbours (when one of them is a `+`, that window or the one beside it
 * holds the `+`). Each byte is read by the exact rule at most once. */

enum { HN_DIGIT, HN_EXP, HN_KEEP, HN_SEP, HN_OTHER, HN_DROP };

static unsigned char hn_class[256];

static void
hn_init(void)
{
    static int done = 0;
    if (done)
        return;
    for (int b = 0; b < 256; b++)
        hn_class[b] = HN_OTHER;
    for (int b = '0'; b <= '9'; b++)
        hn_class[b] = HN_DIGIT;
    const char *seps = ":,[]{} \t\r\n";
    for (const char *c = seps; *c; c++)
        hn_class[(unsigned char)*c] = HN_SEP;
    hn_class['e'] = hn_class['E'] = HN_EXP;
    hn_class['.'] = hn_class['-'] = HN_KEEP;
    hn_class['+'] = HN_DROP;
    done = 1;
}

/* The exact rule's state between two bytes. */
typedef struct {
    Py_ssize_t digits;     /* digits in a row */
    Py_ssize_t run;        /* characters of `0.-` in a row */
    Py_ssize_t exp_digits; /* digits since the `e` of a candidate */
    int run_ok;            /* that run starts the text or follows a separator */
    int prev;              /* the class before this character (the start counts as one) */
    int in_exp;            /* after an `e` that ends a candidate run */
} hn_state;

static void
hn_reset(hn_state *s, int prev)
{
    s->digits = s->run = s->exp_digits = 0;
    s->run_ok = s->in_exp = 0;
    s->prev = prev;
}

/* The exact rule on p[i..] from state `s`, up to and including the first `x`-class byte at or
 * after `stop` (after which the state is reset) or the end of the text (n); `*end` is where it
 * stopped. 1 when it raises the alarm. */
static int
hn_exact(hn_state *s, const unsigned char *p, Py_ssize_t i, Py_ssize_t stop, Py_ssize_t n,
         Py_ssize_t *end)
{
    Py_ssize_t digits = s->digits, run = s->run, exp_digits = s->exp_digits;
    int run_ok = s->run_ok, prev = s->prev, in_exp = s->in_exp;
    for (; i < n; i++) {
        int c = hn_class[p[i]];
        if (c == HN_OTHER) {
            /* ends every run and candidate */
            digits = run = 0;
            in_exp = 0;
            prev = HN_OTHER;
            if (i >= stop) {
                *end = i + 1;
                hn_reset(s, HN_OTHER);
                return 0;
            }
            continue;
        }
        if (c == HN_DROP)
            continue;
        if (c == HN_DIGIT) {
            if (++digits >= 309)
                return 1;
        }
        else
            digits = 0;
        if (in_exp) {
            if (c == HN_DIGIT) {
                exp_digits++;
                prev = c;
                continue;
            }
            if (c == HN_SEP && exp_digits >= 3)
                return 1;
            in_exp = 0;
            /* (the digits after the `e` were a run of `0` behind an `e`: not a candidate) */
            run = exp_digits;
            run_ok = 0;
        }
        switch (c) {
        case HN_DIGIT:
        case HN_KEEP:
            if (run++ == 0)
                run_ok = prev == HN_SEP;
            break;
        case HN_EXP:
            in_exp = run > 0 && run_ok;
            exp_digits = 0;
            run = 0;
            break;
        default:
            run = 0;
        }
        prev = c;
    }
    *end = n;
    s->digits = digits;
    s->run = run;
    s->exp_digits = exp_digits;
    s->run_ok = run_ok;
    s->prev = prev;
    s->in_exp = in_exp;
    return in_exp && exp_digits >= 3;
}

#define HN_WINDOW 16

#if defined(__SSE2__)
#include <emmintrin.h>

/* bytes of `v` within lo..hi, as 0xff */
static inline __m128i
hn_between(__m128i v, char lo, char hi)
{
    __m128i x = _mm_sub_epi8(v, _mm_set1_epi8(lo));
    return _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8((char)(hi - lo))), x);
}

/* Whether the window p[0..16) needs the exact rule (p[-1] and p[16] are read too). */
static inline int
hn_window(const unsigned char *p)
{
    __m128i cur = _mm_loadu_si128((const __m128i *)p);
    __m128i before = _mm_loadu_si128((const __m128i *)(p - 1));
    __m128i after = _mm_loadu_si128((const __m128i *)(p + 1));
    __m128i digit = hn_between(cur, '0', '9');
    if (_mm_movemask_epi8(digit) == 0xffff)
        return 1;
    __m128i e = _mm_cmpeq_epi8(_mm_or_si128(cur, _mm_set1_epi8(0x20)), _mm_set1_epi8('e'));
    __m128i kept = _mm_or_si128(hn_between(before, '0', '9'),
                                _mm_or_si128(_mm_cmpeq_epi8(before, _mm_set1_epi8('.')),
                                             _mm_cmpeq_epi8(before, _mm_set1_epi8('-'))));
    __m128i hit = _mm_and_si128(_mm_and_si128(e, kept), hn_between(after, '0', '9'));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(cur, _mm_set1_epi8('+')));
    return _mm_movemask_epi8(hit) != 0;
}
#else
static inline int
hn_window(const unsigned char *p)
{
    int digits = 0;
    for (int k = 0; k < HN_WINDOW; k++) {
        int c = hn_class[p[k]];
        if (c == HN_DROP)
            return 1;
        digits += c == HN_DIGIT;
        if (c == HN_EXP && hn_class[p[k + 1]] == HN_DIGIT &&
            (hn_class[p[k - 1]] == HN_DIGIT || hn_class[p[k - 1]] == HN_KEEP))
            return 1;
    }
    return digits == HN_WINDOW;
}
#endif

static int
hn_scan(const unsigned char *p, Py_ssize_t n)
{
    hn_state s;
    hn_reset(&s, HN_SEP);
    Py_ssize_t done = 0; /* the exact rule has read p[..done), and `s` is its state there */
    /* the first byte has no byte before it for a window: the exact rule reads it */
    if (hn_exact(&s, p, 0, 1, n, &done))
        return 1;
    Py_ssize_t i = done;
    for (;;) {
        int tail = i + HN_WINDOW + 1 > n;
        if (!tail && !hn_window(p + i)) {
            i += HN_WINDOW;
            continue;
        }
        /* from the last `x` before the window (a reset), or from where the rule stopped */
        Py_ssize_t start = i;
        while (start > done && hn_class[p[start - 1]] != HN_OTHER)
            start--;
        if (start > done)
            hn_reset(&s, HN_OTHER);
        if (hn_exact(&s, p, start, tail ? n : i + HN_WINDOW, n, &done))
            return 1;
        if (done >= n)
            return 0;
        i = done;
    }
}

/* Whether `scan` finds something in a buffer's bytes, read with the GIL released. */
static PyObject *
scan_buffer(PyObject *arg, int (*scan)(const unsigned char *, Py_ssize_t))
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = scan((const unsigned char *)view.buf, view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyObject *
huge_number_risk(PyObject *module, PyObject *arg)
{
    (void)module;
    hn_init();
    return scan_buffer(arg, hn_scan);
}

/* ------------------------------------------------------------------ wide-integer pre-check
 *
 * `wide_int_risk(buffer)`: whether the text may hold an integer that orjson reads as a float
 * (outside [-2**63, 2**64)) while msgspec keeps it exact (`tracetool.trace.checks.orjson_ints`),
 * with the GIL released: `checks.maybe_wide_int`, a pre-filter. An integer token of 20 or more
 * digits, or of 19 from a 9 after a `-` (a run of digits after a separator or the start, or
 * after a `-` there, and before neither `.` nor an exponent); strings are not told apart (a
 * string whose text is such a token after a space only costs the exact pass over the values).
 * Such a run holds a word of 8 digits at a multiple of 8; only those are looked at closer, so
 * the scan reads 64 bytes at a time (from a multiple of 8: eight such words) and stops nowhere
 * else. */

static inline int
wi_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline int
wi_separator(unsigned char c)
{
    return c == ':' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == ' ' ||
           c == '\t' || c == '\r' || c == '\n';
}

/* The digits around the all-digit word at p[at..at+8): its run's end, *risk when the run is an
 * integer token that wide. */
static Py_ssize_t
wi_run(const unsigned char *p, Py_ssize_t n, Py_ssize_t at, int *risk)
{
    Py_ssize_t start = at, end = at + 8;
    while (start > 0 && wi_digit(p[start - 1])) {
        start--;
    }
    while (end < n && wi_digit(p[end])) {
        end++;
    }
    Py_ssize_t before = start; /* (the token's start: its `-` if it has one) */
    int negative = before > 0 && p[before - 1] == '-';
    before -= negative;
    Py_ssize_t digits = end - start;
    *risk = (digits >= 20 || (digits == 19 && negative && p[start] == '9')) &&
            (before == 0 || wi_separator(p[before - 1])) &&
            (end == n || (p[end] != '.' && p[end] != 'e' && p[end] != 'E'));
    return end;
}

static int
wi_scan(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t at = 0;
    int risk = 0;
#if defined(__SSE2__)
    /* 64 bytes at a time: a bit a digit (a byte + 0x50 below -118, signed), then a byte of
     * those bits all ones is a word of 8 digits (the lowest zero byte of their complement) */
    const __m128i shift = _mm_set1_epi8((char)(0x80 - '0'));
    const __m128i limit = _mm_set1_epi8((char)(0x80 + 10));
    while (at + 64 <= n) {
        uint64_t m = 0;
        for (int k = 0; k < 4; k++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + at + 16 * k));
            __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(v, shift), limit);
            m |= (uint64_t)(unsigned int)_mm_movemask_epi8(digit) << (16 * k);
        }
        uint64_t x = ~m;
        uint64_t words = (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
        if (words == 0) {
            at += 64;
            continue;
        }
        Py_ssize_t end = wi_run(p, n, at + 8 * (__builtin_ctzll(words) >> 3), &risk);
        if (risk) {
            return 1;
        }
        at = (end + 7) & ~(Py_ssize_t)7; /* (the next aligned word past the run) */
    }
    while (at + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + at));
        int m = _mm_movemask_epi8(hn_between(v, '0', '9'));
        if ((m & 0xff) != 0xff && (m & 0xff00) != 0xff00) {
            at += 16;
            continue;
        }
        Py_ssize_t word = (m & 0xff) == 0xff ? at : at + 8;
        Py_ssize_t end = wi_run(p, n, word, &risk);
        if (risk) {
            return 1;
        }
        at = (end + 7) & ~(Py_ssize_t)7; /* (the next aligned word past the run) */
    }
#endif
    for (; at + 8 <= n; at += 8) {
        int all = 1;
        for (int k = 0; k < 8; k++) {
            all &= wi_digit(p[at + k]);
        }
        if (all) {
            Py_ssize_t end = wi_run(p, n, at, &risk);
            if (risk) {
                return 1;
            }
            at = ((end + 7) & ~(Py_ssize_t)7) - 8;
        }
    }
    return 0;
}

static PyObject *
wide_int_risk(PyObject *module, PyObject *arg)
{
    (void)module;
    return scan_buffer(arg, wi_scan);
}

/* ------------------------------------------------------------------ first timestamp */

/* `first_timestamp(events)`: `tracetool.index.rows.first_timestamp` of a list of dicts (the
 * first `timestamp` that is an int or a float, as a float; None), or NotImplemented when an
 * event is not a dict (the Python function raises as it does). One dict lookup per event. */
static PyObject *
first_timestamp(PyObject *module, PyObject *events)
{
    (void)module;
    static PyObject *k_timestamp;
    if (k_timestamp == NULL && (k_timestamp = PyUnicode_InternFromString("timestamp")) == NULL) {
        return NULL;
    }
    if (!PyList_Check(events)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (!PyDict_Check(event)) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        PyObject *ts = PyDict_GetItemWithError(event, k_timestamp); /* borrowed */
        if (ts == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            continue;
        }
        if (PyLong_Check(ts) || PyFloat_Check(ts)) {
            return PyNumber_Float(ts);
        }
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ bound classMap */

/* `bound_class_map(roots, used, object_type)`: `tracetool.index.canonical.bound_class_map` of
 * a ClassMap's `roots` and the code objects `used` (a dict, its values), read through the
 * `CodeObject` (`object_type`) slot descriptors: the same dicts, keys in the same order. */
static PyObject *
bound_class_map(PyObject *module, PyObject *args)
{
    PyObject *roots, *used, *type_obj;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!O!:bound_class_map", &PyList_Type, &roots, &PyDict_Type,
                          &used, &PyType_Type, &type_obj)) {
        return NULL;
    }
    static PyObject *k_name, *k_type, *k_location, *k_static, *k_labels, *k_children, *function;
    if (k_name == NULL) {
        k_name = PyUnicode_InternFromString("name");
        k_type = PyUnicode_InternFromString("type");
        k_location = PyUnicode_InternFromString("location");
        k_static = PyUnicode_InternFromString("static");
        k_labels = PyUnicode_InternFromString("labels");
        k_children = PyUnicode_InternFromString("children");
        function = PyUnicode_InternFromString("function");
        if (!k_name || !k_type || !k_location || !k_static || !k_labels || !k_children ||
            !function) {
            Py_CLEAR(k_name);
            return NULL;
        }
    }
    PyObject *slot[CO_COUNT] = {NULL};
    PyObject *keep = NULL, *result = NULL, *out_roots = NULL;
    Buf stack = {NULL, 0, 0}; /* (object, siblings) pairs, strong references */
    for (int i = 0; i < CO_COUNT; i++) {
        slot[i] = PyObject_GetAttrString(type_obj, CO_SLOTS[i]);
        if (slot[i] == NULL) {
            goto done;
        }
        if (Py_TYPE(slot[i])->tp_descr_get == NULL) {
            PyErr_Format(PyExc_TypeError, "%s is not a slot", CO_SLOTS[i]);
            goto done;
        }
    }
    /* the used objects and their ancestors */
    keep = PySet_New(NULL);
    if (keep == NULL) {
        goto done;
    }
    Py_ssize_t at = 0;
    PyObject *key, *co;
    while (PyDict_Next(used, &at, &key, &co)) {
        Py_INCREF(co);
        PyObject *node = co;
        while (node != Py_None) {
            int found = PySet_Contains(keep, node);
            if (found != 0 || PySet_Add(keep, node) < 0) {
                Py_DECREF(node);
                if (found < 0 || PyErr_Occurred()) {
                    goto done;
                }
                node = NULL;
                break;
            }
            PyObject *parent = slot_get(slot[CO_PARENT], node);
            Py_DECREF(node);
            if (parent == NULL) {
                goto done;
            }
            node = parent;
        }
        if (node == Py_None) {
            Py_DECREF(node);
        }
    }
    out_roots = PyList_New(0);
    if (out_roots == NULL) {
        goto done;
    }
    for (Py_ssize_t i = PyList_GET_SIZE(roots) - 1; i >= 0; i--) {
        PyObject *root = PyList_GET_ITEM(roots, i);
        int found = PySet_Contains(keep, root);
        if (found < 0) {
            goto done;
        }
        if (found) {
            PyObject *pair[2] = {root, out_roots};
            if (buf_put(&stack, pair, sizeof(pair)) < 0) {
                PyErr_NoMemory();
                goto done;
            }
            Py_INCREF(root);
            Py_INCREF(out_roots);
        }
    }
    while (stack.len > 0) {
        PyObject *pair[2];
        pop_pair(&stack, pair);
        PyObject *obj = pair[0], *siblings = pair[1];
        PyObject *out = NULL, *value = NULL, *kids = NULL;
        int rc = -1;
        out = PyDict_New();
        if (out == NULL) {
            goto next;
        }
        /* {"name": obj.name, "type": obj.type} */
        if ((value = slot_get(slot[CO_NAME], obj)) == NULL ||
            PyDict_SetItem(out, k_name, value) < 0) {
            goto next;
        }
        Py_CLEAR(value);
        if ((value = slot_get(slot[CO_TYPE], obj)) == NULL ||
            PyDict_SetItem(out, k_type, value) < 0) {
            goto next;
        }
        int is_function = PyObject_RichCompareBool(value, function, Py_EQ);
        Py_CLEAR(value);
        if (is_function < 0) {
            goto next;
        }
        if (is_function) {
            /* a truthy location, then static */
            if ((value = slot_get(slot[CO_LOCATION], obj)) == NULL) {
                goto next;
            }
            int truthy = PyObject_IsTrue(value);
            if (truthy < 0 || (truthy && PyDict_SetItem(out, k_location, value) < 0)) {
                goto next;
            }
            Py_CLEAR(value);
            if ((value = slot_get(slot[CO_STATIC], obj)) == NULL ||
                PyDict_SetItem(out, k_static, value) < 0) {
                goto next;
            }
            Py_CLEAR(value);
        }
        /* list(obj.labels) when truthy */
        if ((value = slot_get(slot[CO_LABELS], obj)) == NULL) {
            goto next;
        }
        int truthy = PyObject_IsTrue(value);
        if (truthy < 0) {
            goto next;
        }
        if (truthy) {
            PyObject *labels = PySequence_List(value);
            if (labels == NULL) {
                goto next;
            }
            int failed = PyDict_SetItem(out, k_labels, labels) < 0;
            Py_DECREF(labels);
            if (failed) {
                goto next;
            }
        }
        Py_CLEAR(value);
        /* out.update(obj.extra) when truthy */
        if ((value = slot_get(slot[CO_EXTRA], obj)) == NULL) {
            goto next;
        }
        truthy = PyObject_IsTrue(value);
        if (truthy < 0) {
            goto next;
        }
        if (truthy) {
            if (PyDict_Check(value)) {
                if (PyDict_Update(out, value) < 0) {
                    goto next;
                }
            }
            else {
                PyObject *done_ = PyObject_CallMethod(out, "update", "O", value);
                if (done_ == NULL) {
                    goto next;
                }
                Py_DECREF(done_);
            }
        }
        Py_CLEAR(value);
        if (PyList_Append(siblings, out) < 0) {
            goto next;
        }
        /* the kept children, pushed last first */
        if ((value = slot_get(slot[CO_CHILDREN], obj)) == NULL) {
            goto next;
        }
        truthy = PyObject_IsTrue(value);
        if (truthy < 0) {
            goto next;
        }
        if (truthy) {
            PyObject *seq = PySequence_Fast(value, "children is not a sequence");
            if (seq == NULL) {
                goto next;
            }
            kids = PyList_New(0);
            for (Py_ssize_t i = 0; kids != NULL && i < PySequence_Fast_GET_SIZE(seq); i++) {
                PyObject *child = PySequence_Fast_GET_ITEM(seq, i);
                int found = PySet_Contains(keep, child);
                if (found < 0 || (found && PyList_Append(kids, child) < 0)) {
                    Py_CLEAR(kids);
                }
            }
            Py_DECREF(seq);
            if (kids == NULL) {
                goto next;
            }
            if (PyList_GET_SIZE(kids) > 0) {
                PyObject *children = PyList_New(0);
                if (children == NULL) {
                    goto next;
                }
                int failed = PyDict_SetItem(out, k_children, children) < 0;
                for (Py_ssize_t i = PyList_GET_SIZE(kids) - 1; !failed && i >= 0; i--) {
                    PyObject *push[2] = {PyList_GET_ITEM(kids, i), children};
                    if (buf_put(&stack, push, sizeof(push)) < 0) {
                        PyErr_NoMemory();
                        failed = 1;
                        break;
                    }
                    Py_INCREF(push[0]);
                    Py_INCREF(push[1]);
                }
                Py_DECREF(children);
                if (failed) {
                    goto next;
                }
            }
        }
        rc = 0;
    next:
        Py_XDECREF(value);
        Py_XDECREF(kids);
        Py_XDECREF(out);
        Py_DECREF(obj);
        Py_DECREF(siblings);
        if (rc < 0) {
            goto done;
        }
    }
    result = out_roots;
    out_roots = NULL;
done:
    free_pairs(&stack);
    Py_XDECREF(out_roots);
    Py_XDECREF(keep);
    for (int i = 0; i < CO_COUNT; i++) {
        Py_XDECREF(slot[i]);
    }
    return result;
}

/* (prune: its section is at the end of the file) */
static PyObject *prune_new(PyObject *module, PyObject *noargs);
static PyObject *prune_scan(PyObject *module, PyObject *args);
static PyObject *prune_totals(PyObject *module, PyObject *capsule);
static PyObject *prune_join(PyObject *module, PyObject *args);

static PyMethodDef methods[] = {
    {"diagram_actions", tt_diagram_actions, METH_VARARGS,
     "diagram_actions(call_roots, cos, kept, order, digests_only, context) -> root actions\n"
     "(tracetool/_speedups_diagram.c)."},
    {"fold_loops", tt_fold_loops, METH_VARARGS,
     "fold_loops(items, tally, Action, LOOP, loop_digest) -> items with loops folded "
     "(tracetool/_speedups_diagram.c)."},
    {"call_tree", tt_call_tree, METH_VARARGS,
     "call_tree(events, roots, nodes, stacks, CallNode, get, mode) -> None\n"
     "(tracetool/_speedups_diagram.c)."},
    {"preorder_calls", tt_preorder_calls, METH_VARARGS,
     "preorder_calls(roots, CallNode) -> (nodes, calls) (tracetool/_speedups_diagram.c)."},
    {"tree_facts", tt_tree_facts, METH_VARARGS,
     "tree_facts(roots, sql_labels, fn_info, absent, label, CallNode) -> (info, sig) or\n"
     "NotImplemented (tracetool/_speedups_diagram.c)."},
    {"bind_heads", tt_bind_heads, METH_VARARGS,
     "bind_heads(calls, functions, unnamed, resolve, UNSET[, memo]) -> code objects "
     "(tracetool/_speedups_diagram.c)."},
    {"sql_premask", tt_sql_premask, METH_O,
     "sql_premask(sql) -> the SQL digest's masked text, or None (tracetool/_speedups_diagram.c)."},
    {"sql_keywords_upper", tt_sql_keywords_upper, METH_VARARGS,
     "sql_keywords_upper(sql, keywords) -> the text, keywords upper-cased, or None "
     "(tracetool/_speedups_diagram.c)."},
    {"uml_lines", tt_uml_lines, METH_VARARGS,
     "uml_lines(stack, lines, memo, limit, Action) -> None (tracetool/_speedups_diagram.c)."},
    {"subtree_digests", tt_subtree_digests, METH_VARARGS,
     "subtree_digests(order, leaves, inner, leaf_digest, inner_digest, fold, Action) -> None\n"
     "(tracetool/_speedups_diagram.c)."},
    {"extract_walk", tt_extract_walk, METH_VARARGS,
     "extract_walk(roots, CallNode, nodes, codes, in_order, context) -> function calls\n"
     "(tracetool/_speedups_extract.c)."},
    {"overhead_pairs", tt_overhead_pairs, METH_VARARGS,
     "overhead_pairs(events, unset, other_key, sql_mark) -> stats' raw sums of parsed events,\n"
     "or None (tracetool/_speedups_extract.c)."},
    {"overhead_names", tt_overhead_names, METH_VARARGS,
     "overhead_names(raw_sums, fn_info, static, unset) -> None: function calls named by the\n"
     "extract (tracetool/_speedups_extract.c)."},
    {"nested_sums", nested_sums, METH_VARARGS,
     "nested_sums(raw, max_depth, unset, chains=None, namer=None, strict=False) -> (sums, others,\n"
     "classmap span) or None (module doc)."},
    {"add_named", add_named, METH_VARARGS,
     "add_named(batch, raw_sums) -> whether the named sums were added to the batch (module doc)."},
    {"trees_holding", trees_holding, METH_VARARGS,
     "trees_holding(events, calls) -> inspect.scan._trees_holding(events, calls), or None."},
    {"screen_calls", screen_calls, METH_VARARGS,
     "screen_calls(events, last, loose) -> inspect.matching.Matcher.screen of a function."},
    {"tree_walk", tree_walk, METH_VARARGS,
     "tree_walk(node_type, roots, release) -> tree.preorder(roots), or tree.release(roots)."},
    {"class_map", class_map, METH_VARARGS,
     "class_map(roots, by_location, children, data, object_type, extra_keys): ClassMap.from_json."},
    {"first_timestamp", first_timestamp, METH_O,
     "first_timestamp(events) -> index.rows.first_timestamp, or NotImplemented."},
    {"bound_class_map", bound_class_map, METH_VARARGS,
     "bound_class_map(roots, used, object_type) -> index.canonical.bound_class_map."},
    {"huge_number_risk", huge_number_risk, METH_O,
     "huge_number_risk(buffer) -> trace.checks.maybe_huge_number of the whole text, GIL released."},
    {"wide_int_risk", wide_int_risk, METH_O,
     "wide_int_risk(buffer) -> whether an int may be one orjson reads as a float; GIL released."},
    {"tree_links", tree_links, METH_O,
     "tree_links(events) -> tracetool.trace.tree.tree_links(events), or None (module doc)."},
    {"diagram_digests", tt_diagram_digests, METH_VARARGS,
     "diagram_digests(call_roots, cos, kept, context, leaves, inner, leaf_digest, inner_digest)\n"
     "-> root subtree digests (tracetool/_speedups_diagram.c)."},
    {"actions_json", tt_actions_json, METH_VARARGS,
     "actions_json(actions, Action) -> their sequence.json text, or None\n"
     "(tracetool/_speedups_json.c)."},
    {"fault_ahead", tt_fault_ahead, METH_VARARGS,
     "fault_ahead(ahead, start) -> whether pymalloc's arenas are now faulted in ahead of use\n"
     "(tracetool/_speedups_arena.c)."},
    {"prune_new", prune_new, METH_NOARGS,
     "prune_new() -> the state of one recording's prune_scan (section prune)."},
    {"prune_scan", prune_scan, METH_VARARGS,
     "prune_scan(state, texts, resolve) -> (marks, lengths) as array('I') bytes, or None\n"
     "(section prune)."},
    {"prune_totals", prune_totals, METH_O,
     "prune_totals(state) -> (late, [(calls, bytes, events) by mark]) (section prune)."},
    {"prune_join", prune_join, METH_VARARGS,
     "prune_join(view, lengths, marks, start, count, keep) -> the kept texts, or None\n"
     "(section prune)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "tracetool._speedups",
    "Optional C accelerator for directory-mode stats (see _speedups.c).", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module_def);
}

/* ================================================================== prune (two passes, C)
 *
 * For `tracetool.transform.prune_streamed` (its module doc has the contract; the Python path
 * there stays the reference): the first pass over a big recording's events, given each event's
 * exact JSON text (the block reader's `msgspec.Raw` items, already checked as JSON), and the
 * second pass's copy of the kept texts. The first pass reads from each text only what the
 * `MinimalEvent` decode, `CallPairing.add_values`, `bind_calls` and `_Plan._mark` read:
 *
 * - `prune_new()`: a capsule holding one recording's pairing state.
 * - `prune_scan(state, texts, resolve)`: per event, the mark of its call (a call: its own; a
 *   return: the call it pairs with as `CallPairing.add_values` pairs it; else 0) and the length
 *   of its text, as two `array('I')` byte strings; per mark, its calls, their events and
 *   bytes (+1 each) are summed in the state (`prune_totals`). A call's mark comes from
 *   `resolve(text)` -> (event, id, thread_id, parent_id, mark), which decodes and binds it in
 *   Python, once per distinct text of the fields binding reads (the presence of the SQL, HTTP
 *   and message fields and the texts of defined_class, method_id, path, lineno and static):
 *   equal texts bind alike, and binding runs in document order, as the Python path runs it.
 *   An event this scan does not read plainly (a duplicate field, an id that is a float or a
 *   container or an int beyond 64 bits, an escaped `event`) takes all five from `resolve`.
 *   None when the Python path's block decode would fail (an event that is not an object, a
 *   request or SQL field that is neither an object nor null) or `resolve` says so (None): the
 *   recording is then pruned whole.
 * - `prune_totals(state)`: (late, [(calls, bytes, events) by mark]); `late` as
 *   `CallPairing.late`.
 * - `prune_join(view, lengths, marks, start, count, keep)`: `_kept_texts`' copy of one block:
 *   the texts of events start..start+count (found by their lengths, a comma between two) whose
 *   mark is kept (`keep`, a byte per mark), comma-separated; None when the lengths do not add
 *   up to the block (the caller decodes it instead).
 *
 * Ids are compared as Python compares them (dicts and a set of the Python values), so ids
 * pair exactly as in `CallPairing`; its records are kept in C, freed when their tree finishes.
 */

#define PR_CAPSULE "tracetool._speedups.prune"
#define PR_MAX_DEPTH (1L << 40) /* (the block reader's parser has bounded the depth) */

enum {
    P_ID,
    P_EVENT,
    P_THREAD,
    P_PARENT,
    P_CLASS,
    P_METHOD,
    P_PATH,
    P_LINENO,
    P_STATIC,
    P_SQL,
    P_SERVER,
    P_CLIENT,
    P_MESSAGE,
    P_COUNT
};

static const char *const PR_NAMES[P_COUNT] = {
    "id", "event", "thread_id", "parent_id", "defined_class", "method_id", "path", "lineno",
    "static", "sql_query", "http_server_request", "http_client_request", "message"};

/* the fields a call's binding reads the text of (`pr_mark`) */
static const int PR_IDENTITY[5] = {P_CLASS, P_METHOD, P_PATH, P_LINENO, P_STATIC};

typedef struct {
    PyObject *id; /* the call's id (strong), NULL while the record is free */
    Py_ssize_t mark;
    Py_ssize_t thread; /* its thread (index in PrState.thr) */
    Py_ssize_t next;   /* the next free record, while free */
    char returned, open;
} PrRec;

typedef struct {
    Buf stack;   /* Py_ssize_t: the records of its open calls, innermost last */
    Buf members; /* Py_ssize_t: the records of the calls of its unfinished tree */
} PrThread;

typedef struct {
    long long calls, bytes, events;
} PrTotal;

typedef struct {
    PyObject *threads;    /* thread id -> its index in thr (an int) */
    PyObject *calls;      /* call id -> the record of the last call of that id (an int) */
    PyObject *unreturned; /* ids of calls of finished trees that had no return */
    int late;
    Buf recs; /* PrRec[] */
    Py_ssize_t free_rec;
    Buf thr;      /* PrThread[] */
    Table marks;  /* a call's identity text (pr_key) -> its mark */
    Buf totals;   /* PrTotal[] by mark */
    Buf key;      /* (pr_key) */
    Buf scratch;  /* (decoded strings) */
    PyObject *last_thread; /* (pr_thread) the last thread id looked up (strong), or NULL */
    Py_ssize_t last_index;  /* and its index */
} PrState;

#define PR_REC(st, r) (((PrRec *)(void *)(st)->recs.p) + (r))
#define PR_THR(st, t) (((PrThread *)(void *)(st)->thr.p) + (t))

static void
pr_free(PrState *st)
{
    if (st == NULL) {
        return;
    }
    Py_XDECREF(st->threads);
    Py_XDECREF(st->calls);
    Py_XDECREF(st->unreturned);
    Py_XDECREF(st->last_thread);
    size_t recs = st->recs.len / sizeof(PrRec);
    for (size_t r = 0; r < recs; r++) {
        Py_XDECREF(PR_REC(st, r)->id);
    }
    size_t threads = st->thr.len / sizeof(PrThread);
    for (size_t t = 0; t < threads; t++) {
        PyMem_Free(PR_THR(st, t)->stack.p);
        PyMem_Free(PR_THR(st, t)->members.p);
    }
    PyMem_Free(st->recs.p);
    PyMem_Free(st->thr.p);
    table_free(&st->marks);
    PyMem_Free(st->totals.p);
    PyMem_Free(st->key.p);
    PyMem_Free(st->scratch.p);
    PyMem_Free(st);
}

static void
pr_capsule_free(PyObject *capsule)
{
    pr_free((PrState *)PyCapsule_GetPointer(capsule, PR_CAPSULE));
}

static PyObject *
prune_new(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
    PrState *st = (PrState *)PyMem_Calloc(1, sizeof(PrState));
    if (st == NULL) {
        return PyErr_NoMemory();
    }
    st->free_rec = -1;
    st->threads = PyDict_New();
    st->calls = PyDict_New();
    st->unreturned = PySet_New(NULL);
    if (st->threads == NULL || st->calls == NULL || st->unreturned == NULL) {
        pr_free(st);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(st, PR_CAPSULE, pr_capsule_free);
    if (capsule == NULL) {
        pr_free(st);
    }
    return capsule;
}

/* The index of a thread's state (added when `add`), -1 when absent, -2 on an error. */
static Py_ssize_t
pr_thread(PrState *st, PyObject *thread, int add)
{
    PyObject *last = st->last_thread;
    if (thread == last) {
        return st->last_index;
    }
    /* an equal int or str is the same key (the ids read plainly are made fresh each time) */
    if (last != NULL && Py_TYPE(thread) == Py_TYPE(last) &&
        (PyLong_CheckExact(thread) || PyUnicode_CheckExact(thread))) {
        int same = PyObject_RichCompareBool(thread, last, Py_EQ);
        if (same < 0) {
            return -2;
        }
        if (same) {
            return st->last_index;
        }
    }
    PyObject *found = PyDict_GetItemWithError(st->threads, thread); /* borrowed */
    if (found != NULL) {
        Py_ssize_t t = PyLong_AsSsize_t(found);
        Py_INCREF(thread);
        Py_XSETREF(st->last_thread, thread);
        st->last_index = t;
        return t;
    }
    if (PyErr_Occurred()) {
        return -2;
    }
    if (!add) {
        return -1;
    }
    Py_ssize_t t = (Py_ssize_t)(st->thr.len / sizeof(PrThread));
    if (buf_reserve(&st->thr, sizeof(PrThread)) < 0) {
        PyErr_NoMemory();
        return -2;
    }
    memset(st->thr.p + st->thr.len, 0, sizeof(PrThread));
    st->thr.len += sizeof(PrThread);
    PyObject *index = PyLong_FromSsize_t(t);
    if (index == NULL) {
        return -2;
    }
    int rc = PyDict_SetItem(st->threads, thread, index);
    Py_DECREF(index);
    return rc < 0 ? -2 : t;
}

static int
pr_push(Buf *b, Py_ssize_t r)
{
    if (buf_put(b, &r, sizeof(r)) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* A call: `CallPairing.add_values`' call branch. */
static int
pr_call(PrState *st, PyObject *id, PyObject *thread, Py_ssize_t mark)
{
    Py_ssize_t t = pr_thread(st, thread, 1);
    if (t < 0) {
        return -1;
    }
    Py_ssize_t r = st->free_rec;
    if (r >= 0) {
        st->free_rec = PR_REC(st, r)->next;
    }
    else {
        if (buf_reserve(&st->recs, sizeof(PrRec)) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        r = (Py_ssize_t)(st->recs.len / sizeof(PrRec));
        st->recs.len += sizeof(PrRec);
    }
    PrRec *rec = PR_REC(st, r);
    Py_INCREF(id);
    rec->id = id;
    rec->mark = mark;
    rec->thread = t;
    rec->next = -1;
    rec->returned = 0;
    rec->open = 1;
    PrThread *th = PR_THR(st, t);
    if (th->stack.len == 0) {
        th->members.len = 0; /* a new tree (the last one finished when its stack emptied) */
    }
    if (pr_push(&th->stack, r) < 0 || pr_push(&th->members, r) < 0) {
        return -1;
    }
    PyObject *index = PyLong_FromSsize_t(r);
    if (index == NULL) {
        return -1;
    }
    int rc = PyDict_SetItem(st->calls, id, index);
    Py_DECREF(index);
    return rc;
}

/* `CallPairing._finish`: forget the calls of a thread's finished tree, freeing their records. */
static int
pr_finish(PrState *st, Py_ssize_t t)
{
    PrThread *th = PR_THR(st, t);
    size_t count = th->members.len / sizeof(Py_ssize_t);
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        Py_ssize_t r;
        memcpy(&r, th->members.p + i * sizeof(r), sizeof(r));
        PrRec *rec = PR_REC(st, r);
        if (rc == 0) {
            PyObject *found = PyDict_GetItemWithError(st->calls, rec->id); /* borrowed */
            if (found != NULL) {
                if (PyLong_AsSsize_t(found) == r) {
                    if (PyDict_DelItem(st->calls, rec->id) < 0 ||
                        (!rec->returned && PySet_Add(st->unreturned, rec->id) < 0)) {
                        rc = -1;
                    }
                }
            }
            else if (PyErr_Occurred()) {
                rc = -1;
            }
        }
        Py_CLEAR(rec->id);
        rec->next = st->free_rec;
        st->free_rec = r;
    }
    th->members.len = 0;
    return rc;
}

/* A return: `CallPairing.add_values`' return branch; *out is the mark it takes (0: none). */
static int
pr_return(PrState *st, PyObject *parent, PyObject *thread, Py_ssize_t *out)
{
    Py_ssize_t r, t;
    *out = 0;
    if (parent == Py_None) {
        t = pr_thread(st, thread, 0);
        if (t == -2) {
            return -1;
        }
        if (t < 0 || PR_THR(st, t)->stack.len == 0) {
            return 0;
        }
        PrThread *th = PR_THR(st, t);
        memcpy(&r, th->stack.p + th->stack.len - sizeof(r), sizeof(r));
    }
    else {
        PyObject *found = PyDict_GetItemWithError(st->calls, parent); /* borrowed */
        if (found == NULL) {
            if (PyErr_Occurred()) {
                return -1;
            }
            int in = PySet_Contains(st->unreturned, parent);
            if (in < 0) {
                return -1;
            }
            if (in) {
                st->late = 1;
            }
            return 0;
        }
        r = PyLong_AsSsize_t(found);
        t = PR_REC(st, r)->thread;
    }
    PrRec *rec = PR_REC(st, r);
    if (!rec->returned) {
        rec->returned = 1;
        *out = rec->mark;
    }
    if (rec->open) {
        PrThread *th = PR_THR(st, t);
        while (th->stack.len > 0) {
            Py_ssize_t popped;
            th->stack.len -= sizeof(popped);
            memcpy(&popped, th->stack.p + th->stack.len, sizeof(popped));
            PR_REC(st, popped)->open = 0;
            if (popped == r) {
                break;
            }
        }
        if (th->stack.len == 0) {
            return pr_finish(st, t);
        }
    }
    return 0;
}

/* The PrTotal of a mark, the table grown to hold it; NULL on NOMEM (set). */
static PrTotal *
pr_total(PrState *st, Py_ssize_t mark)
{
    size_t need = ((size_t)mark + 1) * sizeof(PrTotal);
    if (st->totals.len < need) {
        if (buf_reserve(&st->totals, need - st->totals.len) < 0) {
            PyErr_NoMemory();
            return NULL;
        }
        memset(st->totals.p + st->totals.len, 0, need - st->totals.len);
        st->totals.len = need;
    }
    return ((PrTotal *)(void *)st->totals.p) + mark;
}

/* A mark from Python: an int that fits an `array('I')` item. */
static int
pr_mark_value(PyObject *value, Py_ssize_t *mark)
{
    Py_ssize_t v = PyLong_AsSsize_t(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0 || (unsigned long long)v > 0xFFFFFFFEULL) {
        PyErr_SetString(PyExc_OverflowError, "prune_scan: a mark out of range");
        return -1;
    }
    *mark = v;
    return 0;
}

/* resolve(text), checked: a 5-tuple, or Py_None (to bail); NULL on an error. */
static PyObject *
pr_resolve(PyObject *resolve, PyObject *text)
{
    PyObject *res = PyObject_CallOneArg(resolve, text);
    if (res != NULL && res != Py_None && (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 5)) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "prune_scan: resolve must return a 5-tuple or None");
        return NULL;
    }
    return res;
}

/* An event read by Python (`resolve`): 0, 1 to bail, -1 on an error. */
static int
pr_fallback(PrState *st, PyObject *text, PyObject *resolve, Py_ssize_t *mark_out, int *is_call)
{
    static PyObject *s_call, *s_return;
    if (s_call == NULL) {
        s_call = PyUnicode_InternFromString("call");
        s_return = PyUnicode_InternFromString("return");
        if (s_call == NULL || s_return == NULL) {
            Py_CLEAR(s_call);
            return -1;
        }
    }
    PyObject *res = pr_resolve(resolve, text);
    if (res == NULL) {
        return -1;
    }
    if (res == Py_None) {
        Py_DECREF(res);
        return 1;
    }
    PyObject *event = PyTuple_GET_ITEM(res, 0);
    int rc = 0;
    int call = PyObject_RichCompareBool(event, s_call, Py_EQ);
    if (call < 0) {
        rc = -1;
    }
    else if (call) {
        Py_ssize_t mark;
        rc = pr_mark_value(PyTuple_GET_ITEM(res, 4), &mark);
        if (rc == 0) {
            rc = pr_call(st, PyTuple_GET_ITEM(res, 1), PyTuple_GET_ITEM(res, 2), mark);
        }
        if (rc == 0) {
            *mark_out = mark;
            *is_call = 1;
        }
    }
    else {
        int ret = PyObject_RichCompareBool(event, s_return, Py_EQ);
        if (ret < 0) {
            rc = -1;
        }
        else if (ret) {
            rc = pr_return(st, PyTuple_GET_ITEM(res, 3), PyTuple_GET_ITEM(res, 2), mark_out);
        }
    }
    Py_DECREF(res);
    return rc;
}

static inline int
pr_present(const Tok *tok)
{
    return tok->type != 0 && tok->type != 'n';
}

/* The mark of a call read plainly: by the text of what binding reads, else from `resolve`. */
static int
pr_mark(PrState *st, const Src *src, const Tok *toks, PyObject *text, PyObject *resolve,
        Py_ssize_t *mark)
{
    Buf *key = &st->key;
    key->len = 0;
    unsigned char flags =
        (unsigned char)(pr_present(&toks[P_SQL]) | pr_present(&toks[P_SERVER]) << 1 |
                        pr_present(&toks[P_CLIENT]) << 2 | pr_present(&toks[P_MESSAGE]) << 3);
    if (buf_put(key, &flags, 1) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < 5; i++) {
        const Tok *tok = &toks[PR_IDENTITY[i]];
        unsigned char type = (unsigned char)tok->type;
        uint64_t len = type ? (uint64_t)(tok->end - tok->start) : 0;
        if (buf_put(key, &type, 1) < 0 || buf_put(key, &len, sizeof(len)) < 0 ||
            (len && buf_put(key, src->s + tok->start, (size_t)len) < 0)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    int rc;
    Slot *slot = table_get(&st->marks, key->p, key->len, 0, 0, &rc);
    if (rc < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (slot != NULL) {
        *mark = slot->value;
        return 0;
    }
    PyObject *res = pr_resolve(resolve, text);
    if (res == NULL) {
        return -1;
    }
    if (res == Py_None) {
        Py_DECREF(res);
        return 1;
    }
    rc = pr_mark_value(PyTuple_GET_ITEM(res, 4), mark);
    Py_DECREF(res);
    if (rc < 0) {
        return -1;
    }
    table_get(&st->marks, key->p, key->len, 1, *mark, &rc);
    if (rc < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* A token's Python value as a `MinimalEvent` field reads it (missing: None); NULL with *bail
 * set when this scan does not read it (the caller asks `resolve`), or on an error. */
static PyObject *
pr_value(PrState *st, const Src *src, const Tok *tok, int *bail)
{
    int rc;
    PyObject *value = value_of(src, tok, Py_None, &st->scratch, &rc);
    if (value == NULL) {
        if (rc == BAIL) {
            *bail = 1;
        }
        else if (rc == NOMEM) {
            PyErr_NoMemory();
        }
    }
    return value;
}

/* The prefix XOR of a word: bit i is the parity of bits 0..i (a quote mask -> the bytes from
 * each opening quote up to, not including, its closing one). */
static inline uint64_t
pr_prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

static inline int
pr_popcount(uint64_t x)
{
    /* (no popcnt instruction in the baseline x86-64 build: a libgcc call otherwise) */
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* A 64-byte block's quotes, backslashes, opening and closing brackets, a bit each. */
static inline void
pr_masks(const unsigned char *p, uint64_t *quote, uint64_t *slash, uint64_t *open,
         uint64_t *close)
{
    uint64_t q = 0, b = 0, o = 0, c = 0;
#if defined(__SSE2__)
    for (int i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        /* ('[' | 0x20 is '{', ']' | 0x20 is '}', and no other byte is) */
        __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
        int shift = 16 * i;
        q |= (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')))
             << shift;
        b |= (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))
             << shift;
        o |= (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(lower, _mm_set1_epi8('{')))
             << shift;
        c |= (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(lower, _mm_set1_epi8('}')))
             << shift;
    }
#else
    for (int i = 0; i < 64; i++) {
        unsigned char ch = p[i];
        q |= (uint64_t)(ch == '"') << i;
        b |= (uint64_t)(ch == '\\') << i;
        o |= (uint64_t)(ch == '{' || ch == '[') << i;
        c |= (uint64_t)(ch == '}' || ch == ']') << i;
    }
#endif
    *quote = q;
    *slash = b;
    *open = o;
    *close = c;
}

/* Skip the object or array at s[pos] (its opening byte) of a text already checked as JSON: the
 * position after it, or BAIL (unclosed). Read 64 bytes at a time (the last block padded with
 * spaces): a block without a backslash by its masks alone (its strings by the prefix XOR of
 * its quotes; its brackets walked one by one only where the depth may reach 0), a block with
 * one a structural byte at a time (`skip_container`'s way). */
static Py_ssize_t
pr_skip_container(const unsigned char *s, Py_ssize_t n, Py_ssize_t pos)
{
    long depth = 0;
    int in_string = 0;
    Py_ssize_t escaped = -1; /* the byte a backslash in a string escapes */
    unsigned char pad[64];
    for (Py_ssize_t at = pos; at < n; at += 64) {
        const unsigned char *p = s + at;
        if (n - at < 64) {
            memset(pad, ' ', sizeof(pad));
            memcpy(pad, p, (size_t)(n - at));
            p = pad;
        }
        uint64_t quote, slash, open, close;
        pr_masks(p, &quote, &slash, &open, &close);
        if (slash == 0 && escaped != at) {
            uint64_t strings = pr_prefix_xor(quote) ^ (in_string ? ~0ULL : 0);
            in_string = (int)(strings >> 63);
            open &= ~strings;
            close &= ~strings;
            long closes = (long)pr_popcount(close);
            if (depth - closes > 0) {
                depth += (long)pr_popcount(open) - closes;
                continue;
            }
            uint64_t both = open | close;
            while (both != 0) {
                int i = __builtin_ctzll(both);
                both &= both - 1;
                if ((open >> i) & 1) {
                    depth++;
                }
                else if (--depth == 0) {
                    return at + i + 1;
                }
            }
            continue;
        }
        uint64_t mask = quote | slash | open | close;
        while (mask != 0) {
            int j = __builtin_ctzll(mask);
            mask &= mask - 1;
            Py_ssize_t i = at + j;
            unsigned char c = p[j];
            if (in_string) {
                if (i == escaped) {
                    continue;
                }
                if (c == '\\') {
                    escaped = i + 1;
                }
                else if (c == '"') {
                    in_string = 0;
                }
            }
            else if (c == '"') {
                in_string = 1;
            }
            else if (c == '{' || c == '[') {
                depth++;
            }
            else if (c == '}' || c == ']') {
                if (--depth == 0) {
                    return i + 1;
                }
            }
        }
    }
    return BAIL;
}

/* Whitespace (a byte above ' ' never is). */
static inline Py_ssize_t
pr_ws(const unsigned char *s, Py_ssize_t n, Py_ssize_t pos)
{
    while (pos < n && s[pos] <= ' ' &&
           (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\r' || s[pos] == '\t')) {
        pos++;
    }
    return pos;
}

/* The field of PR_NAMES a key names, or -1. */
static int
pr_field(const unsigned char *name, size_t len)
{
#define PR_IS(f) (memcmp(name, PR_NAMES[f], len) == 0 ? (f) : -1)
    switch (len) {
    case 2:
        return PR_IS(P_ID);
    case 4:
        return PR_IS(P_PATH);
    case 5:
        return PR_IS(P_EVENT);
    case 6:
        return name[0] == 'l' ? PR_IS(P_LINENO) : PR_IS(P_STATIC);
    case 7:
        return PR_IS(P_MESSAGE);
    case 9:
        switch (name[0]) {
        case 't':
            return PR_IS(P_THREAD);
        case 'p':
            return PR_IS(P_PARENT);
        case 'm':
            return PR_IS(P_METHOD);
        case 's':
            return PR_IS(P_SQL);
        default:
            return -1;
        }
    case 13:
        return PR_IS(P_CLASS);
    case 19:
        return name[5] == 's' ? PR_IS(P_SERVER) : PR_IS(P_CLIENT);
    default:
        return -1;
    }
#undef PR_IS
}

/* `scan_object` for an event's text (already checked as JSON): the tokens of the PR_NAMES
 * fields (a duplicate is BAIL); the position after the object, or BAIL. Containers are
 * skipped by `pr_skip_container`, strings 16 bytes at a time. */
static Py_ssize_t
pr_scan_event(const Src *src, Tok *toks, Buf *scratch, int *rc)
{
    const unsigned char *s = src->s;
    Py_ssize_t n = src->n;
    *rc = 0;
    for (int i = 0; i < P_COUNT; i++) {
        toks[i].type = 0;
    }
    if (n == 0 || s[0] != '{') {
        return BAIL;
    }
    Py_ssize_t pos = pr_ws(s, n, 1);
    if (pos < n && s[pos] == '}') {
        return pos + 1;
    }
    for (;;) {
        Key key = read_key(src, pos, 1, scratch, rc);
        if ((pos = key.end) < 0) {
            return BAIL;
        }
        int field = key.len > 0 ? pr_field(key.name, key.len) : -1;
        pos = pr_ws(s, n, pos);
        if (pos >= n || s[pos] != ':') {
            return BAIL;
        }
        pos = pr_ws(s, n, pos + 1);
        if (pos >= n) {
            return BAIL;
        }
        Tok value;
        value.start = pos;
        value.esc = 0;
        unsigned char c = s[pos];
        if (c == '"') {
            value.type = 's';
            pos = pr_string(s, n, pos, &value.esc);
        }
        else if (c == '{' || c == '[') {
            value.type = (char)c;
            pos = pr_skip_container(s, n, pos);
        }
        else if (c == 't' || c == 'f' || c == 'n') {
            const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
            Py_ssize_t wlen = c == 'f' ? 5 : 4;
            if (n - pos < wlen || memcmp(s + pos, word, (size_t)wlen) != 0) {
                return BAIL;
            }
            value.type = (char)c;
            pos += wlen;
        }
        else if (c == '-' || (c >= '0' && c <= '9')) {
            value.type = '0';
            while (pos < n && is_number_byte(s[pos])) {
                pos++;
            }
        }
        else {
            return BAIL;
        }
        if (pos < 0) {
            return BAIL;
        }
        value.end = pos;
        if (field >= 0) {
            if (toks[field].type != 0) {
                return BAIL; /* a duplicate key: which one a decoder keeps is its own rule */
            }
            toks[field] = value;
        }
        if (pos < n && s[pos] == ',') { /* (compact JSON: no whitespace to skip) */
            pos++;
            if (pos < n && s[pos] == '"') {
                continue;
            }
            pos = pr_ws(s, n, pos);
            continue;
        }
        pos = pr_ws(s, n, pos);
        if (pos >= n) {
            return BAIL;
        }
        if (s[pos] == '}') {
            return pos + 1;
        }
        if (s[pos] != ',') {
            return BAIL;
        }
        pos = pr_ws(s, n, pos + 1);
    }
}

/* One event: 0 (its mark in *mark_out, *is_call for a call), 1 to bail, -1 on an error. */
static int
pr_event(PrState *st, PyObject *text, const Src *src, PyObject *resolve, Py_ssize_t *mark_out,
         int *is_call)
{
    Tok toks[P_COUNT];
    int rc = 0;
    *mark_out = 0;
    *is_call = 0;
    if (src->n == 0 || src->s[0] != '{') {
        return 1; /* not an object: the block decode fails */
    }
    Py_ssize_t end = pr_scan_event(src, toks, &st->scratch, &rc);
    if (rc == NOMEM) {
        PyErr_NoMemory();
        return -1;
    }
    if (end < 0) {
        return pr_fallback(st, text, resolve, mark_out, is_call);
    }
    for (int f = P_SQL; f <= P_CLIENT; f++) {
        char type = toks[f].type;
        if (type != 0 && type != 'n' && type != '{') {
            return 1; /* `Optional[_Marker]`: the block decode fails */
        }
    }
    const Tok *event = &toks[P_EVENT];
    int kind = 0;
    if (event->type == 's') {
        if (event->esc) {
            return pr_fallback(st, text, resolve, mark_out, is_call);
        }
        Py_ssize_t len = event->end - event->start - 2;
        const unsigned char *name = src->s + event->start + 1;
        if (len == 4 && memcmp(name, "call", 4) == 0) {
            kind = 1;
        }
        else if (len == 6 && memcmp(name, "return", 6) == 0) {
            kind = 2;
        }
    }
    if (kind == 0) {
        return 0;
    }
    int bail = 0;
    if (kind == 1) {
        PyObject *id = pr_value(st, src, &toks[P_ID], &bail);
        PyObject *thread = id == NULL ? NULL : pr_value(st, src, &toks[P_THREAD], &bail);
        if (thread == NULL) {
            Py_XDECREF(id);
            return bail ? pr_fallback(st, text, resolve, mark_out, is_call) : -1;
        }
        Py_ssize_t mark = 0;
        rc = pr_mark(st, src, toks, text, resolve, &mark);
        if (rc == 0) {
            rc = pr_call(st, id, thread, mark);
        }
        Py_DECREF(id);
        Py_DECREF(thread);
        if (rc == 0) {
            *mark_out = mark;
            *is_call = 1;
        }
        return rc;
    }
    PyObject *parent = pr_value(st, src, &toks[P_PARENT], &bail);
    if (parent == NULL) {
        return bail ? pr_fallback(st, text, resolve, mark_out, is_call) : -1;
    }
    PyObject *thread = NULL;
    if (parent == Py_None) {
        thread = pr_value(st, src, &toks[P_THREAD], &bail);
        if (thread == NULL) {
            Py_DECREF(parent);
            return bail ? pr_fallback(st, text, resolve, mark_out, is_call) : -1;
        }
    }
    rc = pr_return(st, parent, thread, mark_out);
    Py_DECREF(parent);
    Py_XDECREF(thread);
    return rc;
}

static PyObject *
prune_scan(PyObject *module, PyObject *args)
{
    PyObject *capsule, *texts, *resolve;
    (void)module;
    if (!PyArg_ParseTuple(args, "OO!O:prune_scan", &capsule, &PyList_Type, &texts, &resolve)) {
        return NULL;
    }
    PrState *st = (PrState *)PyCapsule_GetPointer(capsule, PR_CAPSULE);
    if (st == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts);
    if (n > PY_SSIZE_T_MAX / 4) {
        return PyErr_NoMemory();
    }
    PyObject *marks = PyBytes_FromStringAndSize(NULL, n * 4);
    PyObject *lengths = PyBytes_FromStringAndSize(NULL, n * 4);
    if (marks == NULL || lengths == NULL) {
        Py_XDECREF(marks);
        Py_XDECREF(lengths);
        return NULL;
    }
    char *mark_at = PyBytes_AS_STRING(marks);
    char *length_at = PyBytes_AS_STRING(lengths);
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        if (i >= PyList_GET_SIZE(texts)) { /* (`resolve` is Python: trust nothing) */
            PyErr_SetString(PyExc_RuntimeError, "prune_scan: the list changed");
            rc = -1;
            break;
        }
        PyObject *text = PyList_GET_ITEM(texts, i);
        Py_INCREF(text);
        Py_buffer view;
        if (PyObject_GetBuffer(text, &view, PyBUF_SIMPLE) < 0) {
            Py_DECREF(text);
            rc = -1;
            break;
        }
        if ((unsigned long long)view.len > 0xFFFFFFFFULL) {
            PyErr_SetString(PyExc_OverflowError, "prune_scan: an event over 4 GB");
            rc = -1;
        }
        Py_ssize_t mark = 0;
        int is_call = 0;
        if (rc == 0) {
            Src src = {(const unsigned char *)view.buf, view.len, PR_MAX_DEPTH, 0};
            rc = pr_event(st, text, &src, resolve, &mark, &is_call);
        }
        if (rc == 0) {
            PrTotal *total = pr_total(st, mark);
            if (total == NULL) {
                rc = -1;
            }
            else {
                total->calls += is_call;
                total->bytes += (long long)view.len + 1; /* (+1: its separator) */
                total->events += 1;
                uint32_t m = (uint32_t)mark, len = (uint32_t)view.len;
                memcpy(mark_at + 4 * i, &m, 4);
                memcpy(length_at + 4 * i, &len, 4);
            }
        }
        PyBuffer_Release(&view);
        Py_DECREF(text);
    }
    if (rc != 0) {
        Py_DECREF(marks);
        Py_DECREF(lengths);
        if (rc < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    PyObject *result = PyTuple_Pack(2, marks, lengths);
    Py_DECREF(marks);
    Py_DECREF(lengths);
    return result;
}

static PyObject *
prune_totals(PyObject *module, PyObject *capsule)
{
    (void)module;
    PrState *st = (PrState *)PyCapsule_GetPointer(capsule, PR_CAPSULE);
    if (st == NULL) {
        return NULL;
    }
    Py_ssize_t count = (Py_ssize_t)(st->totals.len / sizeof(PrTotal));
    PyObject *list = PyList_New(count);
    if (list == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        const PrTotal *total = ((const PrTotal *)(const void *)st->totals.p) + i;
        PyObject *item = Py_BuildValue("(LLL)", total->calls, total->bytes, total->events);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    PyObject *result = Py_BuildValue("(ON)", st->late ? Py_True : Py_False, list);
    return result;
}

/* An `array('I')`'s buffer (4-byte items). */
static int
pr_uint32s(PyObject *obj, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT) < 0) {
        return -1;
    }
    if (view->itemsize != 4 || view->format == NULL || strcmp(view->format, "I") != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "prune_join: %s must be an array('I') of 4-byte items",
                     what);
        return -1;
    }
    return 0;
}

static PyObject *
prune_join(PyObject *module, PyObject *args)
{
    PyObject *view_obj, *lengths_obj, *marks_obj, *keep_obj;
    Py_ssize_t start, count;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOnnO:prune_join", &view_obj, &lengths_obj, &marks_obj,
                          &start, &count, &keep_obj)) {
        return NULL;
    }
    Py_buffer view, lengths, marks, keep;
    if (PyObject_GetBuffer(view_obj, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (pr_uint32s(lengths_obj, &lengths, "lengths") < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (pr_uint32s(marks_obj, &marks, "marks") < 0) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&lengths);
        return NULL;
    }
    if (PyObject_GetBuffer(keep_obj, &keep, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&lengths);
        PyBuffer_Release(&marks);
        return NULL;
    }
    PyObject *result = NULL;
    const unsigned char *len_at, *mark_at, *keep_at;
    unsigned long long whole = 0, kept = 0;
    Py_ssize_t kept_count = 0;
    Py_ssize_t items = lengths.len / 4;
    if (start < 0 || count < 0 || start > items || count > items - start ||
        marks.len / 4 < start + count) {
        PyErr_SetString(PyExc_IndexError, "prune_join: events out of range");
        goto done;
    }
    len_at = (const unsigned char *)lengths.buf + 4 * start;
    mark_at = (const unsigned char *)marks.buf + 4 * start;
    keep_at = (const unsigned char *)keep.buf;
    /* the texts and a comma between two must make the block (else the caller decodes it) */
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t len, mark;
        memcpy(&len, len_at + 4 * i, 4);
        memcpy(&mark, mark_at + 4 * i, 4);
        if ((Py_ssize_t)mark >= keep.len) {
            PyErr_SetString(PyExc_IndexError, "prune_join: a mark beyond keep");
            goto done;
        }
        whole += (unsigned long long)len + 1;
        if (keep_at[mark]) {
            kept += (unsigned long long)len + 1;
            kept_count++;
        }
    }
    if (count == 0 || whole - 1 != (unsigned long long)view.len) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, kept_count ? (Py_ssize_t)(kept - 1) : 0);
    if (result == NULL) {
        goto done;
    }
    char *out = PyBytes_AS_STRING(result);
    const char *text = (const char *)view.buf;
    size_t at = 0, written = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t len, mark;
        memcpy(&len, len_at + 4 * i, 4);
        memcpy(&mark, mark_at + 4 * i, 4);
        if (keep_at[mark]) {
            if (written) {
                out[written++] = ',';
            }
            memcpy(out + written, text + at, len);
            written += len;
        }
        at += (size_t)len + 1;
    }
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&marks);
    PyBuffer_Release(&keep);
    return result;
}
