/* tracetool/_speedups_json.c: a sequence diagram's actions written as sequence.json text.
 *
 * A source file of the optional `tracetool._speedups` extension (setup.py); its entry point is
 * in `_speedups.c`'s method table:
 *
 *     actions_json(actions, Action) -> bytes, or None (declined)
 *
 * The bytes are those `tracetool.diagram.service.json_stream` cuts out of
 * `orjson.dumps([actions], option=OPT_INDENT_2, default=json_default)` (`text[5:-6]`: each
 * action's object at an indent of two levels, after a newline, the objects separated by
 * commas), written straight from the Action objects: no dict per action, no Python call per
 * action. The Python path (`tracetool.diagram.model.json_default`, orjson) stays the reference;
 * tests/diagram/test_speedups_json.py compares both byte for byte (the corpus recordings, random
 * action trees and random values).
 *
 * It writes what orjson writes: keys in `_action_json`'s order, absent values left out, strings
 * as UTF-8 with `"`, `\` and control characters escaped as orjson escapes them (`\b \t \n \f
 * \r`, else `\u00xx`), integers of 64 bits, floats as orjson formats them (Python's repr but
 * for the exponent: no leading zero, and the decimal form for exponent -5), `true`, `false`,
 * `null`, dicts and lists indented by two spaces, `{}` and `[]` when empty. Anything else
 * declines the whole call (None, nothing raised) and the caller runs orjson, which writes it
 * or raises as it always did: another type (a subclass, a tuple, a non-string key), an integer
 * beyond 64 bits, a float that is not finite, a string that is not valid UTF-8 (lone
 * surrogates), a slot left unset, an actor without an `id`, an action not of the `Action` class
 * given (or a class whose `__slots__` are not the known ones), and nesting deeper than
 * `MAX_DEPTH` (orjson refuses ~254 levels: the caller's fallback for deep trees stays its own).
 * An error of its own (memory) raises.
 *
 * Where the time went (60 MB benchmark recording, 101,000 actions, 96 MB of text): orjson with
 * `json_default`'s dict per action 0.21-0.29 s, this 0.07-0.12 s (1.13 G instructions in its
 * first version, 0.51 G now: floats formatted without dtoa when they are whole numbers of
 * some power of ten (the elapsed times), strings checked 16 bytes at a time and copied whole,
 * integers without printf, the text grown in the bytes object returned). What stays: the
 * first read of every action, dict and string, and the text's own pages.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* _speedups_diagram.c's: the offsets of a class's object slots */
int learn_slots(PyObject *type, const char *const *names, int n, Py_ssize_t *out,
                PyTypeObject **cached);

enum {
    J_CALLEE,
    J_CALLER,
    J_CHILDREN,
    J_COUNT,
    J_DIFF_MODE,
    J_DIGEST,
    J_ELAPSED,
    J_EVENT_IDS,
    J_FORMER_NAME,
    J_FORMER_RESULT,
    J_LABELS,
    J_NAME,
    J_NODE_TYPE,
    J_QUERY,
    J_RETURN_VALUE,
    J_ROUTE,
    J_STABLE_PROPERTIES,
    J_STATIC,
    J_STATUS,
    J_SUBTREE_DIGEST,
    J_N_SLOTS
};

static const char *const j_slot_names[J_N_SLOTS] = {
    "callee",      "caller",        "children", "count",  "diff_mode",         "digest",
    "elapsed",     "event_ids",     "former_name", "former_result", "labels", "name",
    "node_type",   "query",         "return_value", "route", "stable_properties", "static",
    "status",      "subtree_digest"};

static PyTypeObject *j_action_type = NULL;
static Py_ssize_t j_offsets[J_N_SLOTS];

#define JSLOT(obj, i) (*(PyObject **)((char *)(obj) + j_offsets[i]))

/* containers open at once, the outer two lists included; deeper declines (module doc) */
#define MAX_DEPTH 200

/* AppMap's node types (tracetool.diagram.model) */
#define T_LOOP 1
#define T_FUNCTION 3
#define T_SERVER_RPC 4
#define T_CLIENT_RPC 5
#define T_QUERY 6

/* The text being written: a bytes object grown as needed (cut to its length at the end, so
 * the text is not copied once more), with `SLACK` bytes always free past the reserved ones
 * (indents and strings are copied 16 bytes at a time). */
typedef struct {
    PyObject *bytes;
    char *data;
    size_t len, cap;
} Buf;

#define SLACK 64

enum { OK = 0, DECLINE = 1, FAIL = -1 };

static int
grow(Buf *b, size_t more)
{
    size_t need = b->len + more + SLACK;
    if (need <= b->cap)
        return OK;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < need)
        cap *= 2;
    if (b->bytes == NULL)
        b->bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    else
        (void)_PyBytes_Resize(&b->bytes, (Py_ssize_t)cap); /* (NULL on a failure) */
    if (b->bytes == NULL)
        return FAIL;
    b->data = PyBytes_AS_STRING(b->bytes);
    b->cap = cap;
    return OK;
}

#define RESERVE(b, n)                                                                             \
    do {                                                                                          \
        if ((b)->len + (size_t)(n) + SLACK > (b)->cap && grow((b), (size_t)(n)) != OK)            \
            return FAIL;                                                                          \
    } while (0)

static inline void
put(Buf *b, const char *s, size_t n)
{
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

#define PUT_LIT(b, s) put((b), (s), sizeof(s) - 1)

static char spaces[2 * (MAX_DEPTH + 2) + 16];

/* a newline and `level` levels of indent (reserved by the caller: 1 + 2 * level bytes) */
static inline void
newline(Buf *b, int level)
{
    char *out = b->data + b->len;
    *out++ = '\n';
    size_t n = (size_t)(2 * level);
    for (size_t k = 0; k < n; k += 16) /* (into the slack past n: overwritten next) */
        memcpy(out + k, spaces, 16);
    b->len += 1 + n;
}

/* ------------------------------------------------------------------ strings */

/* 1 for the bytes orjson escapes */
static unsigned char escaped[256];

static const char hexdigits[] = "0123456789abcdef";

static void
init_tables(void)
{
    static int done = 0;
    if (done)
        return;
    memset(spaces, ' ', sizeof(spaces));
    for (int c = 0; c < 0x20; c++)
        escaped[c] = 1;
    escaped['"'] = 1;
    escaped['\\'] = 1;
    done = 1;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* whether the 8 bytes of `w` have one below 0x20, '"' or '\\' */
static inline int
special8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * 0x22), bs = w ^ (ones * 0x5c);
    uint64_t hit = ((w - ones * 0x20) | (q - ones) | (bs - ones));
    /* (a byte's high bit set in `hit` but not in `w`... is one of them, or a borrow's false
     * alarm: false alarms only cost the slow path) */
    return (hit & ~w & highs) != 0;
}

/* whether `s[0:n]` holds no byte to escape (false alarms allowed: `special8`) */
static inline int
clean(const char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                  control = _mm_set1_epi8(0x1f);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i m = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
            _mm_cmpeq_epi8(_mm_min_epu8(v, control), v));
        if (_mm_movemask_epi8(m))
            return 0;
    }
#endif
    uint64_t w;
    if (n >= 8) {
        /* what is left, in at most two words that may overlap what was checked */
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, s + i, 8);
            if (special8(w))
                return 0;
        }
        if (i < n) {
            memcpy(&w, s + n - 8, 8);
            if (special8(w))
                return 0;
        }
        return 1;
    }
    for (; i < n; i++)
        if (escaped[(unsigned char)s[i]])
            return 0;
    return 1;
}

static int
write_utf8(Buf *b, const char *s, Py_ssize_t n)
{
    if (clean(s, n)) {
        RESERVE(b, (size_t)n + 2);
        char *out = b->data + b->len;
        *out = '"';
        memcpy(out + 1, s, (size_t)n);
        out[n + 1] = '"';
        b->len += (size_t)n + 2;
        return OK;
    }
    /* the worst case: every byte as \u00xx */
    RESERVE(b, 6 * (size_t)n + 2);
    char *out = b->data + b->len;
    *out++ = '"';
    Py_ssize_t i = 0;
    for (;;) {
#if defined(__SSE2__)
        /* 16 bytes at a time, copied as they are checked (the slack holds a partial copy) */
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                      control = _mm_set1_epi8(0x1f);
        while (i + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            _mm_storeu_si128((__m128i *)out, v);
            __m128i m = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                _mm_cmpeq_epi8(_mm_min_epu8(v, control), v));
            int mask = _mm_movemask_epi8(m);
            if (mask) {
                int k = __builtin_ctz((unsigned)mask);
                i += k;
                out += k;
                break;
            }
            i += 16;
            out += 16;
        }
#endif
        while (i < n && !escaped[(unsigned char)s[i]])
            *out++ = s[i++];
        if (i == n)
            break;
        unsigned char c = (unsigned char)s[i++];
        *out++ = '\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\b': *out++ = 'b'; break;
        case '\t': *out++ = 't'; break;
        case '\n': *out++ = 'n'; break;
        case '\f': *out++ = 'f'; break;
        case '\r': *out++ = 'r'; break;
        default:
            *out++ = 'u';
            *out++ = '0';
            *out++ = '0';
            *out++ = hexdigits[c >> 4];
            *out++ = hexdigits[c & 15];
        }
    }
    *out++ = '"';
    b->len = (size_t)(out - b->data);
    return OK;
}

static int
write_str(Buf *b, PyObject *s)
{
    Py_ssize_t n;
    if (PyUnicode_IS_COMPACT_ASCII(s))
        return write_utf8(b, (const char *)PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s));
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &n);
    if (utf8 == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeError))
            return FAIL;
        PyErr_Clear(); /* (lone surrogates: orjson raises, the caller's run of it too) */
        return DECLINE;
    }
    return write_utf8(b, utf8, n);
}

/* ------------------------------------------------------------------ numbers */

/* the decimal digits of `u` at `out` (at most 20); their count */
static inline size_t
put_u64(char *out, unsigned long long u)
{
    char text[24];
    size_t k = sizeof(text);
    do {
        text[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    memcpy(out, text + k, sizeof(text) - k);
    return sizeof(text) - k;
}

static int
write_int(Buf *b, PyObject *v)
{
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return FAIL;
    RESERVE(b, 21);
    char *out = b->data + b->len;
    if (overflow == 0) {
        if (x < 0) {
            *out++ = '-';
            b->len++;
            b->len += put_u64(out, 0ULL - (unsigned long long)x);
        }
        else
            b->len += put_u64(out, (unsigned long long)x);
        return OK;
    }
    if (overflow < 0)
        return DECLINE; /* below -2**63: orjson raises */
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return FAIL;
        PyErr_Clear();
        return DECLINE; /* beyond 64 bits: orjson raises */
    }
    b->len += put_u64(out, u);
    return OK;
}

/* The texts of floats written lately, by their bits (a recording's elapsed times repeat:
 * they are whole microseconds, mostly), so that few go through Python's dtoa. */
typedef struct {
    uint64_t bits;
    unsigned char len; /* 0: empty */
    char text[31];
} FloatMemo;

#define FLOAT_MEMO 4096
static FloatMemo float_memo[FLOAT_MEMO];

/* orjson's text of a finite float (repr's, but for the exponent: module doc) into `memo` */
static int
format_float(double x, FloatMemo *memo)
{
    char *r = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (r == NULL)
        return FAIL;
    size_t n = strlen(r);
    char *e = strchr(r, 'e');
    char *text = memo->text;
    size_t k = 0;
    int status = OK;
    if (n > 25) {
        status = DECLINE; /* (never: the repr of a double is at most 24 characters) */
    }
    else if (e == NULL) {
        memcpy(text, r, n);
        k = n;
    }
    else {
        int exp = atoi(e + 1);
        const char *m = r;
        if (exp == -5) {
            /* 4.5e-05 -> 0.000045 */
            if (*m == '-')
                text[k++] = *m++;
            memcpy(text + k, "0.0000", 6);
            k += 6;
            for (; m < e; m++)
                if (*m != '.')
                    text[k++] = *m;
        }
        else {
            memcpy(text, r, (size_t)(e - r));
            k = (size_t)(e - r);
            text[k++] = 'e';
            text[k++] = exp < 0 ? '-' : '+';
            k += put_u64(text + k, (unsigned long long)(exp < 0 ? -exp : exp));
        }
    }
    PyMem_Free(r);
    memo->len = (unsigned char)k;
    return status;
}

static const double pow10s[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* The common case of `format_float` without dtoa: a float of 1e-5 <= |x| < 1e15 that is
 * m / 10**k for an integer m of at most 15 digits (a whole number of microseconds...). The
 * smallest such k gives repr's digits: no shorter text reads back as x, and m is the only
 * candidate of its length (15 digits tell doubles apart), so it is repr's, written in the
 * fixed notation repr uses from 1e-4 and orjson from 1e-5 (`format_float`). 0 when x is not
 * such a number (nothing written); the caller reserved nothing. */
static int
fixed_float(Buf *b, double x)
{
    double a = x < 0 ? -x : x;
    if (!(a >= 1e-5 && a < 1e15))
        return 0;
    int whole = 1; /* digits of the integer part */
    for (double t = 10.0; t <= a && whole < 15; t *= 10.0)
        whole++;
    int frac_zeros = 0; /* zeros after the point before the first significant digit */
    if (a < 1.0) {
        whole = 0;
        static const double tenths[5] = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5};
        while (frac_zeros < 5 && a < tenths[frac_zeros])
            frac_zeros++;
    }
    for (int k = 0; k < 16 && (whole + k - frac_zeros) <= 15; k++) {
        double m = nearbyint(a * pow10s[k]);
        if (m / pow10s[k] != a)
            continue;
        unsigned long long u = (unsigned long long)m;
        char digits[24];
        size_t nd = put_u64(digits, u);
        if (grow(b, 48) != OK) {
            PyErr_Clear(); /* (the caller's slow path meets the same lack of memory) */
            return 0;
        }
        char *out = b->data + b->len;
        if (x < 0)
            *out++ = '-';
        if (k == 0) {
            memcpy(out, digits, nd);
            out += nd;
            memcpy(out, ".0", 2);
            out += 2;
        }
        else if ((int)nd > k) {
            memcpy(out, digits, nd - (size_t)k);
            out += nd - (size_t)k;
            *out++ = '.';
            memcpy(out, digits + nd - (size_t)k, (size_t)k);
            out += k;
        }
        else {
            *out++ = '0';
            *out++ = '.';
            for (int z = 0; z < k - (int)nd; z++)
                *out++ = '0';
            memcpy(out, digits, nd);
            out += nd;
        }
        b->len = (size_t)(out - b->data);
        return 1;
    }
    return 0;
}

static int
write_float(Buf *b, PyObject *v)
{
    double x = PyFloat_AS_DOUBLE(v);
    if (!isfinite(x))
        return DECLINE; /* (orjson writes null) */
    if (fixed_float(b, x))
        return OK;
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    FloatMemo *memo = &float_memo[(bits * 0x9E3779B97F4A7C15ULL) >> 52];
    if (memo->len == 0 || memo->bits != bits) {
        memo->len = 0;
        int status = format_float(x, memo);
        if (status != OK) {
            memo->len = 0;
            return status;
        }
        memo->bits = bits;
    }
    RESERVE(b, memo->len);
    put(b, memo->text, memo->len);
    return OK;
}

/* ------------------------------------------------------------------ values */

static int write_value(Buf *b, PyObject *v, int level);

static int
write_list(Buf *b, PyObject *list, int level)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n == 0) {
        RESERVE(b, 2);
        PUT_LIT(b, "[]");
        return OK;
    }
    if (level + 1 >= MAX_DEPTH)
        return DECLINE;
    RESERVE(b, 1);
    PUT_LIT(b, "[");
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        RESERVE(b, 2 + 2 * (level + 1));
        if (i > 0)
            PUT_LIT(b, ",");
        newline(b, level + 1);
        PyObject *item = PyList_GET_ITEM(list, i);
        Py_INCREF(item);
        int status = write_value(b, item, level + 1);
        Py_DECREF(item);
        if (status != OK)
            return status;
    }
    RESERVE(b, 2 + 2 * level);
    newline(b, level);
    PUT_LIT(b, "]");
    return OK;
}

static int
write_dict(Buf *b, PyObject *dict, int level)
{
    if (PyDict_GET_SIZE(dict) == 0) {
        RESERVE(b, 2);
        PUT_LIT(b, "{}");
        return OK;
    }
    if (level + 1 >= MAX_DEPTH)
        return DECLINE;
    RESERVE(b, 1);
    PUT_LIT(b, "{");
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))
            return DECLINE;
        RESERVE(b, 2 + 2 * (level + 1));
        if (i++ > 0)
            PUT_LIT(b, ",");
        newline(b, level + 1);
        Py_INCREF(key);
        Py_INCREF(value);
        int status = write_str(b, key);
        if (status == OK) {
            RESERVE(b, 2);
            PUT_LIT(b, ": ");
            status = write_value(b, value, level + 1);
        }
        Py_DECREF(key);
        Py_DECREF(value);
        if (status != OK)
            return status;
    }
    RESERVE(b, 2 + 2 * level);
    newline(b, level);
    PUT_LIT(b, "}");
    return OK;
}

/* a value of the recording (not an action) at `level` */
static int
write_value(Buf *b, PyObject *v, int level)
{
    if (v == Py_None) {
        RESERVE(b, 4);
        PUT_LIT(b, "null");
        return OK;
    }
    if (v == Py_True) {
        RESERVE(b, 4);
        PUT_LIT(b, "true");
        return OK;
    }
    if (v == Py_False) {
        RESERVE(b, 5);
        PUT_LIT(b, "false");
        return OK;
    }
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type)
        return write_str(b, v);
    if (t == &PyLong_Type)
        return write_int(b, v);
    if (t == &PyFloat_Type)
        return write_float(b, v);
    if (t == &PyDict_Type)
        return write_dict(b, v, level);
    if (t == &PyList_Type)
        return write_list(b, v, level);
    return DECLINE;
}

/* ------------------------------------------------------------------ actions */

/* `,` (but for the first key), a newline at `level`, then `text` (`"key": `) */
static inline __attribute__((always_inline)) int
key_at(Buf *b, const char *text, size_t n, int level, int *first)
{
    RESERVE(b, 2 + 2 * level + n);
    if (!*first)
        b->data[b->len++] = ',';
    *first = 0;
    newline(b, level);
    put(b, text, n);
    return OK;
}

#define KEY(name)                                                                                 \
    do {                                                                                          \
        if (key_at(b, "\"" name "\": ", sizeof(name) + 3, level + 1, &first) != OK)               \
            return FAIL;                                                                          \
    } while (0)

#define CHECK(call)                                                                               \
    do {                                                                                          \
        int status_ = (call);                                                                     \
        if (status_ != OK)                                                                        \
            return status_;                                                                       \
    } while (0)

static PyObject *s_id;

/* `actor.id`, written; declines an actor without one */
static int
write_actor_id(Buf *b, PyObject *actor, int level)
{
    PyObject *id = PyObject_GetAttr(actor, s_id);
    if (id == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return FAIL;
        PyErr_Clear(); /* (the Python path raises it: the caller's run of it) */
        return DECLINE;
    }
    int status = write_value(b, id, level);
    Py_DECREF(id);
    return status;
}

/* One pending piece of the walk: an action to open, or the closing of an action's children
 * list and object (`close`). */
typedef struct {
    PyObject *action; /* a strong reference */
    int level;
    int close;
    int first; /* (an action to open) whether it is the first of its list */
} Item;

typedef struct {
    Item *items;
    Py_ssize_t len, cap;
} Stack;

static int
push(Stack *s, PyObject *action, int level, int close, int first)
{
    if (s->len == s->cap) {
        Py_ssize_t cap = s->cap ? 2 * s->cap : 256;
        Item *items = PyMem_Realloc(s->items, (size_t)cap * sizeof(Item));
        if (items == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        s->items = items;
        s->cap = cap;
    }
    Py_INCREF(action);
    s->items[s->len++] = (Item){action, level, close, first};
    return OK;
}

/* The keys after "children" of an action (`_action_json`'s order) and its closing brace. */
static int
write_tail(Buf *b, PyObject *a, int level)
{
    int first = 0;
    PyObject *v = JSLOT(a, J_ELAPSED);
    if (v != Py_None) {
        KEY("elapsed");
        CHECK(write_value(b, v, level + 1));
    }
    KEY("eventIds");
    CHECK(write_value(b, JSLOT(a, J_EVENT_IDS), level + 1));
    v = JSLOT(a, J_LABELS);
    if (v != Py_None && !PyList_CheckExact(v))
        return DECLINE;
    if (v != Py_None && PyList_GET_SIZE(v) > 0) {
        KEY("labels");
        CHECK(write_value(b, v, level + 1));
    }
    if ((v = JSLOT(a, J_DIFF_MODE)) != Py_None) {
        KEY("diffMode");
        CHECK(write_value(b, v, level + 1));
    }
    if ((v = JSLOT(a, J_FORMER_NAME)) != Py_None) {
        KEY("formerName");
        CHECK(write_value(b, v, level + 1));
    }
    if ((v = JSLOT(a, J_FORMER_RESULT)) != Py_None) {
        KEY("formerResult");
        CHECK(write_value(b, v, level + 1));
    }
    RESERVE(b, 2 + 2 * level);
    newline(b, level);
    PUT_LIT(b, "}");
    return OK;
}

/* An action's object up to its "children" value's opening (pushing the children, then the
 * tail), or the whole of it when it has no children. */
static int
open_action(Buf *b, Stack *stack, PyObject *a, int level)
{
    if (Py_TYPE(a) != j_action_type)
        return DECLINE;
    for (int i = 0; i < J_N_SLOTS; i++)
        if (JSLOT(a, i) == NULL)
            return DECLINE; /* (an unset slot: the Python path raises AttributeError) */
    if (level + 2 >= MAX_DEPTH)
        return DECLINE;
    PyObject *kind = JSLOT(a, J_NODE_TYPE);
    if (!PyLong_CheckExact(kind))
        return DECLINE;
    int overflow;
    long t = PyLong_AsLongAndOverflow(kind, &overflow);
    if (t == -1 && PyErr_Occurred())
        return FAIL;
    if (overflow)
        t = -1; /* (no known type; written as it is) */
    int first = 1;
    RESERVE(b, 1);
    PUT_LIT(b, "{");
    KEY("nodeType");
    CHECK(write_int(b, kind));
    PyObject *v;
    if (t == T_LOOP) {
        KEY("count");
        CHECK(write_value(b, JSLOT(a, J_COUNT), level + 1));
    }
    else {
        if (t != T_SERVER_RPC && (v = JSLOT(a, J_CALLER)) != Py_None) {
            KEY("caller");
            CHECK(write_actor_id(b, v, level + 1));
        }
        if ((v = JSLOT(a, J_CALLEE)) != Py_None) {
            KEY("callee");
            CHECK(write_actor_id(b, v, level + 1));
        }
        if (t == T_FUNCTION) {
            KEY("name");
            CHECK(write_value(b, JSLOT(a, J_NAME), level + 1));
            KEY("static");
            CHECK(write_value(b, JSLOT(a, J_STATIC), level + 1));
        }
        else if (t == T_SERVER_RPC || t == T_CLIENT_RPC) {
            KEY("route");
            CHECK(write_value(b, JSLOT(a, J_ROUTE), level + 1));
            if ((v = JSLOT(a, J_STATUS)) != Py_None) {
                KEY("status");
                CHECK(write_value(b, v, level + 1));
            }
        }
        else if (t == T_QUERY) {
            KEY("query");
            CHECK(write_value(b, JSLOT(a, J_QUERY), level + 1));
        }
    }
    KEY("digest");
    CHECK(write_value(b, JSLOT(a, J_DIGEST), level + 1));
    KEY("subtreeDigest");
    CHECK(write_value(b, JSLOT(a, J_SUBTREE_DIGEST), level + 1));
    if (t == T_FUNCTION) {
        if ((v = JSLOT(a, J_STABLE_PROPERTIES)) != Py_None) {
            KEY("stableProperties");
            CHECK(write_value(b, v, level + 1));
        }
        if ((v = JSLOT(a, J_RETURN_VALUE)) != Py_None) {
            KEY("returnValue");
            CHECK(write_value(b, v, level + 1));
        }
    }
    KEY("children");
    PyObject *children = JSLOT(a, J_CHILDREN);
    if (!PyList_CheckExact(children))
        return DECLINE;
    Py_ssize_t n = PyList_GET_SIZE(children);
    if (n == 0) {
        RESERVE(b, 2);
        PUT_LIT(b, "[]");
        return write_tail(b, a, level);
    }
    RESERVE(b, 1);
    PUT_LIT(b, "[");
    CHECK(push(stack, a, level, 1, 0));
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        CHECK(push(stack, PyList_GET_ITEM(children, i), level + 2, 0, i == 0));
    return OK;
}

/* the walk: `actions` at level 2, each after a newline, separated by commas */
static int
write_actions(Buf *b, PyObject *actions)
{
    Stack stack = {NULL, 0, 0};
    int status = OK;
    Py_ssize_t n = PyList_GET_SIZE(actions);
    for (Py_ssize_t i = n - 1; i >= 0 && status == OK; i--)
        status = push(&stack, PyList_GET_ITEM(actions, i), 2, 0, i == 0);
    while (status == OK && stack.len > 0) {
        Item item = stack.items[--stack.len];
        if (item.close) {
            /* the children list's closing, then the keys after it */
            status = grow(b, 2 + 2 * (size_t)(item.level + 1));
            if (status == OK) {
                newline(b, item.level + 1);
                PUT_LIT(b, "]");
                status = write_tail(b, item.action, item.level);
            }
            Py_DECREF(item.action);
            continue;
        }
        status = grow(b, 2 + 2 * (size_t)item.level);
        if (status == OK) {
            if (!item.first)
                PUT_LIT(b, ",");
            newline(b, item.level);
            status = open_action(b, &stack, item.action, item.level);
        }
        Py_DECREF(item.action);
    }
    while (stack.len > 0)
        Py_DECREF(stack.items[--stack.len].action);
    PyMem_Free(stack.items);
    return status;
}

PyObject *
tt_actions_json(PyObject *self, PyObject *args)
{
    PyObject *actions, *type;
    if (!PyArg_ParseTuple(args, "O!O:actions_json", &PyList_Type, &actions, &type))
        return NULL;
    init_tables();
    if (s_id == NULL && (s_id = PyUnicode_InternFromString("id")) == NULL)
        return NULL;
    int learned = learn_slots(type, j_slot_names, J_N_SLOTS, j_offsets, &j_action_type);
    if (learned < 0)
        return NULL;
    if (learned > 0)
        Py_RETURN_NONE;
    Py_INCREF(actions); /* (held while walked) */
    static size_t last_len = 0; /* (the last text's size: most often room enough at once) */
    Buf b = {NULL, NULL, 0, 0};
    int status = grow(&b, last_len + last_len / 8);
    if (status == OK)
        status = write_actions(&b, actions);
    Py_DECREF(actions);
    if (status != OK) {
        Py_XDECREF(b.bytes);
        if (status == DECLINE)
            Py_RETURN_NONE;
        return NULL;
    }
    last_len = b.len;
    if (_PyBytes_Resize(&b.bytes, (Py_ssize_t)b.len) < 0)
        return NULL;
    return b.bytes;
}
