/* tracetool/_speedups_extract.c: the index's walk of a call tree in C.
 *
 * A source file of the optional `tracetool._speedups` extension (setup.py); its entry point is
 * in `_speedups.c`'s method table. Its pure-Python twin, which stays the reference and the
 * fallback, is `Extractor._walk` (tracetool/index/extract.py); tests/index/
 * test_speedups_extract.py runs both on every recording it has (the shared corpus, generated,
 * random and mutated ones) and compares every field of the Extract and of the Bound.
 *
 *     extract_walk(roots, CallNode, nodes, codes, in_order, context) -> number of function calls
 *
 * where context is (has_http, fn_info, sql_cache, items, queries, pairs, functions_seen,
 * params_seen, sql_seen, function_values, canonical_sql, code_object_for, resolve_sql, sql_key,
 * code_object, http_server, http_client, log, exceptions, sides,
 * class_dependencies, package_dependencies, names, parameters, classes, packages, labels, used,
 * funcs, log_labels, log_levels, by_location, CodeObject, class_dependencies_seen,
 * package_dependencies_seen, locations, logs, messages, last_params, sql_normalized,
 * sql_tables, dynamic): the Extractor's caches, the Canonical's sets, bound methods and value lists
 * (`Extractor.add` lists them), and the walk's cold paths (`_sql`, `_code_object`,
 * `_http_server`, ...). A function's first call (`Extractor._function`) is
 * resolved here around the classMap's `code_object_for`: the marking as used, the aggregate,
 * the function's and its class's rows (`rows.function_row`) and the log test
 * (`rows.is_log_call`, with `rows.LOG_LABELS` and `LOG_LEVELS`).
 *
 * Per call it does in C what `_walk` does inline: the pre-order walk (an explicit stack, any
 * depth), the elapsed time, the kind, a function call's resolution by its key in `fn_info` and
 * its aggregates (count, total, self and slowest time, open frames), a SQL call's entry in
 * `sql_cache` and its query row, the request's SQL count and time, a log call's row
 * (`Extractor._log` for a parameter list); and of the Canonical, what its methods would do for
 * the common shapes: `dependency` (with its `_side`s, kept in its cache, and `_depend`),
 * `function` for a parameter list of objects (new names as its `_names` reads them; a call
 * with the names of the function's last call found by comparing them, `last_params`), and
 * `sql`. Cache misses, HTTP calls, other calls and exceptions call the same Python helpers
 * `_walk` calls, at the same point of the walk, so rows, items and canonical values come in
 * the same order.
 *
 * Numbers are Python's: `elapsed * 1000.0` of an int or a float, and the sums and comparisons of
 * the aggregates, are the same IEEE double operations in the same order (a float subclass or an
 * int subclass other than bool, which no JSON decoder makes, goes through PyNumber_Multiply).
 *
 * Where the time went (`Extractor.add` over 60 recordings of the benchmark's seed 1, 37,000
 * calls, SQL analyses cached as in a worker; callgrind): 1,290 M instructions in Python, 790 M
 * with this walk, of which 400 M are the Python helpers of the cold paths (a function's first
 * call in a recording: its code object, row and log test, ~8,700 calls; SQL, HTTP and other
 * calls' code objects) and most of the rest dict lookups of event fields. CPU of `add` over 200
 * recordings: 0.60-0.77 s -> 0.41-0.46 s. Then (40 recordings, callgrind, the walk alone): 546 M
 * -> 415 M instructions, by resolving a function's first call here (504 M), reading code
 * objects' slots instead of their Python properties and making their ids here (447 M), and
 * reading event fields by the decoder's own key objects (`Context.keys`; 415 M). Then (237
 * recordings of /tmp/s200, callgrind of `Extractor` init, add and finish after the worker's
 * `warm_up`): 3,488 M -> 2,933 M instructions with the per-process caches warm, the walk
 * 1,994 M -> 1,609 M; 4,904 M -> 4,406 M for a first pass (1,355 M of it SQL analyses), by
 * keeping HTTP requests' routes and rows and SQL texts' items by value (extract.py's `_facts`),
 * log rows, `Canonical.sql` and new parameter names here, a known function's repeated
 * parameter names found by comparing them with its last call's, `path:line` texts kept per
 * process, ids joined in one allocation, and dependencies appended once per pair. What is left
 * in Python: HTTP calls' and new SQL texts' code objects (`ClassMap.child`, ~13,500 calls,
 * ~270 M) and HTTP rows (~6,300 calls, ~110 M); of the walk in C, a function's first call in a
 * recording (~30,000, ~260 M) and the key of every function call in `fn_info` (its strings
 * hashed and compared). Then the dynamic code objects were made here (`dynamic`: `new_sql`
 * for `_sql`, `http_code_object` for an HTTP request's `_code_object` whose facts the
 * process keeps; objects made slot by slot as `CodeObject.__init__` makes them, a
 * ClassMap that keeps `by_fqid` left to the Python): the process CPU of parse + extract + free
 * of 200 recordings of seed 1 (caches warm) 3.47 s -> 2.99 s.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ names */

static PyObject *s_caller, *s_callee, *s_type, *s_class, *s_package, *s_labels, *s_extend, *s_parent, *s_get, *s_call, *s_ret, *s_children, *s_elapsed, *s_id, *s_http_server_request,
    *s_http_client_request, *s_sql_query, *s_method_id, *s_defined_class, *s_path, *s_lineno,
    *s_static, *s_parameters, *s_exceptions, *s_fqid, *s_sql, *s_database_type, *s_location, *s_function, *s_colon, *s_value, *s_self, *s_cls, *s_ellipsis, *s_properties, *s_name;
static PyObject *s_by_fqid, *s_normalized, *s_database, *s_query, *s_database_root, *s_http,
    *s_route, *s_external_service, *s_external_route, *s_http_server_response,
    *s_http_client_response, *s_status_code, *s_status, *s_message;
static PyObject *one, *minus_one, *thousand;

static int
intern_names(void)
{
    if (s_name != NULL)
        return 0;
#define INTERN(var, text)                                   \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return -1;
    INTERN(s_get, "get")
    INTERN(s_call, "call")
    INTERN(s_ret, "ret")
    INTERN(s_children, "children")
    INTERN(s_elapsed, "elapsed")
    INTERN(s_id, "id")
    INTERN(s_parent, "parent")
    INTERN(s_caller, "caller")
    INTERN(s_callee, "callee")
    INTERN(s_type, "type")
    INTERN(s_class, "class")
    INTERN(s_package, "package")
    INTERN(s_labels, "labels")
    INTERN(s_extend, "extend")
    INTERN(s_http_server_request, "http_server_request")
    INTERN(s_http_client_request, "http_client_request")
    INTERN(s_sql_query, "sql_query")
    INTERN(s_method_id, "method_id")
    INTERN(s_defined_class, "defined_class")
    INTERN(s_path, "path")
    INTERN(s_lineno, "lineno")
    INTERN(s_static, "static")
    INTERN(s_parameters, "parameters")
    INTERN(s_exceptions, "exceptions")
    INTERN(s_fqid, "fqid")
    INTERN(s_sql, "sql")
    INTERN(s_database_type, "database_type")
    INTERN(s_location, "location")
    INTERN(s_function, "function")
    INTERN(s_colon, ":")
    INTERN(s_value, "value")
    INTERN(s_self, "self")
    INTERN(s_cls, "cls")
    INTERN(s_properties, "properties")
    INTERN(s_by_fqid, "_by_fqid")
    INTERN(s_normalized, "normalized")
    INTERN(s_database, "database")
    INTERN(s_query, "query")
    INTERN(s_database_root, "Database")
    INTERN(s_http, "http")
    INTERN(s_http_server_response, "http_server_response")
    INTERN(s_http_client_response, "http_client_response")
    INTERN(s_status_code, "status_code")
    INTERN(s_status, "status")
    INTERN(s_message, "message")
    INTERN(s_route, "route")
    INTERN(s_external_service, "external-service")
    INTERN(s_external_route, "external-route")
    if ((s_ellipsis = PyUnicode_FromString("\xe2\x80\xa6")) == NULL) /* (UTF-8 of "…") */
        return -1;
#undef INTERN
    if ((one = PyLong_FromLong(1)) == NULL || (minus_one = PyLong_FromLong(-1)) == NULL ||
        (thousand = PyFloat_FromDouble(1000.0)) == NULL)
        return -1;
    if ((s_name = PyUnicode_InternFromString("name")) == NULL) /* last: the "done" mark */
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ Python's operations */

/* `obj.get(key)` (new ref): read in place from a dict, else by calling its `get`. */
static PyObject *
get(PyObject *obj, PyObject *key)
{
    if (PyDict_CheckExact(obj)) {
        PyObject *value = PyDict_GetItemWithError(obj, key);
        if (value != NULL)
            return Py_NewRef(value);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return PyObject_CallMethodOneArg(obj, s_get, key);
}

/* `key in obj`: 1, 0 or -1 */
static int
contains(PyObject *obj, PyObject *key)
{
    if (PyDict_CheckExact(obj))
        return PyDict_Contains(obj, key);
    return PySequence_Contains(obj, key);
}

/* `seq[i]` (new ref) */
static PyObject *
item_get(PyObject *seq, Py_ssize_t i)
{
    if (PyList_CheckExact(seq) && i < PyList_GET_SIZE(seq))
        return Py_NewRef(PyList_GET_ITEM(seq, i));
    PyObject *index = PyLong_FromSsize_t(i);
    if (index == NULL)
        return NULL;
    PyObject *value = PyObject_GetItem(seq, index);
    Py_DECREF(index);
    return value;
}

/* `seq[i] = value`, stealing `value` (which may be NULL: an error already raised) */
static int
item_set(PyObject *seq, Py_ssize_t i, PyObject *value)
{
    if (value == NULL)
        return -1;
    if (PyList_CheckExact(seq) && i < PyList_GET_SIZE(seq))
        return PyList_SetItem(seq, i, value);
    PyObject *index = PyLong_FromSsize_t(i);
    int rc = index == NULL ? -1 : PyObject_SetItem(seq, index, value);
    Py_XDECREF(index);
    Py_DECREF(value);
    return rc;
}

/* `seq[i] += delta` (`sign` 1) or `seq[i] -= delta` (`sign` -1), `delta` a float of value `d`:
 * a float item is added to in C (the same double operation). */
static int
item_add_float(PyObject *seq, Py_ssize_t i, double d, PyObject *delta, int sign)
{
    PyObject *item = item_get(seq, i);
    if (item == NULL)
        return -1;
    PyObject *sum;
    if (PyFloat_CheckExact(item))
        sum = PyFloat_FromDouble(sign > 0 ? PyFloat_AS_DOUBLE(item) + d
                                          : PyFloat_AS_DOUBLE(item) - d);
    else
        sum = sign > 0 ? PyNumber_InPlaceAdd(item, delta) : PyNumber_InPlaceSubtract(item, delta);
    Py_DECREF(item);
    return item_set(seq, i, sum);
}

/* `seq[i] += delta`, delta an int */
static int
item_add_int(PyObject *seq, Py_ssize_t i, PyObject *delta)
{
    PyObject *item = item_get(seq, i);
    if (item == NULL)
        return -1;
    PyObject *sum = PyNumber_InPlaceAdd(item, delta);
    Py_DECREF(item);
    return item_set(seq, i, sum);
}

/* `id(obj)` (new ref) */
#define ID(obj) PyLong_FromVoidPtr(obj)

/* The call's elapsed time in milliseconds, as `_walk` computes it: `*ms` set (a new float, its
 * value in `*d`) or left NULL when the return has no int or float `elapsed`; -1 on an error. */
static int
elapsed_ms(PyObject *ret, PyObject *key, PyObject **ms, double *d)
{
    *ms = NULL;
    if (ret == Py_None)
        return 0;
    PyObject *elapsed = get(ret, key);
    if (elapsed == NULL)
        return -1;
    int rc = 0;
    if (PyFloat_CheckExact(elapsed)) {
        *d = PyFloat_AS_DOUBLE(elapsed) * 1000.0;
        rc = (*ms = PyFloat_FromDouble(*d)) == NULL ? -1 : 0;
    }
    else if (PyLong_CheckExact(elapsed) || PyBool_Check(elapsed)) {
        double value = PyLong_AsDouble(elapsed); /* (float * int converts the int so) */
        if (value == -1.0 && PyErr_Occurred())
            rc = -1;
        else {
            *d = value * 1000.0;
            rc = (*ms = PyFloat_FromDouble(*d)) == NULL ? -1 : 0;
        }
    }
    else if (PyFloat_Check(elapsed) || PyLong_Check(elapsed)) {
        PyObject *product = PyNumber_Multiply(elapsed, thousand);
        if (product == NULL)
            rc = -1;
        else if (!PyFloat_Check(product)) {
            Py_DECREF(product);
            PyErr_SetString(PyExc_TypeError, "extract_walk: elapsed * 1000.0 is not a float");
            rc = -1;
        }
        else {
            *d = PyFloat_AS_DOUBLE(product);
            *ms = product;
        }
    }
    Py_DECREF(elapsed);
    return rc;
}

/* ------------------------------------------------------------------ CallNode's slots */

/* _speedups_diagram.c's: the offsets of a class's object slots */
int learn_slots(PyObject *type, const char *const *names, int n, Py_ssize_t *out,
                PyTypeObject **cached);

enum { N_CALL, N_CHILDREN, N_RET, N_SLOTS };
static const char *const node_slot_names[N_SLOTS] = {"call", "children", "ret"};
static PyTypeObject *node_type = NULL; /* a strong reference, the class the offsets are of */
static Py_ssize_t node_offsets[N_SLOTS];

/* `node.<slot>` (new ref): read in place from a node of the known class, else by attribute */
static PyObject *
node_get(PyObject *node, int i, PyObject *name)
{
    if (Py_TYPE(node) == node_type) {
        PyObject *value = *(PyObject **)((char *)node + node_offsets[i]);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(node, name);
}

/* ------------------------------------------------------------------ CodeObject's slots */

enum {
    C_FQID, C_ID, C_TYPE, C_PARENT, C_NAME, C_LABELS, C_STATIC, C_LOCATION, C_CHILDREN, C_EXTRA,
    C_SLOTS
};
static const char *const co_slot_names[C_SLOTS] = {
    "_fqid", "_id", "type", "parent", "name", "labels", "static", "location", "children", "extra"};
static PyTypeObject *co_type = NULL; /* a strong reference, the class the offsets are of */
static Py_ssize_t co_offsets[C_SLOTS];

#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + co_offsets[i]))

/* `f"{a}{sep}{b}"` of two str objects and an ASCII separator (new ref), in one allocation
 * (PyUnicode_FromFormat parses its format each time). The inputs being canonical, the widest
 * of their kinds is the result's. */
static PyObject *
join3(PyObject *a, const char *sep, PyObject *b)
{
    Py_ssize_t la = PyUnicode_GET_LENGTH(a), lb = PyUnicode_GET_LENGTH(b);
    Py_ssize_t ls = (Py_ssize_t)strlen(sep);
    if (la > PY_SSIZE_T_MAX - ls - lb)
        return PyErr_NoMemory();
    Py_UCS4 max = PyUnicode_MAX_CHAR_VALUE(a);
    if (PyUnicode_MAX_CHAR_VALUE(b) > max)
        max = PyUnicode_MAX_CHAR_VALUE(b);
    PyObject *out = PyUnicode_New(la + ls + lb, max);
    if (out == NULL)
        return NULL;
    int kind = PyUnicode_KIND(out);
    void *data = PyUnicode_DATA(out);
    if (PyUnicode_CopyCharacters(out, 0, a, 0, la) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < ls; i++)
        PyUnicode_WRITE(kind, data, la + i, (Py_UCS4)(unsigned char)sep[i]);
    if (PyUnicode_CopyCharacters(out, la + ls, b, 0, lb) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* Whether a string is one of `codeobjects._NAMELESS_PARENTS`'s types */
static int
nameless(PyObject *type)
{
    return PyUnicode_CompareWithASCIIString(type, "http") == 0 ||
           PyUnicode_CompareWithASCIIString(type, "database") == 0 ||
           PyUnicode_CompareWithASCIIString(type, "external-service") == 0;
}

/* `CodeObject.id` of a code object of the known class (new ref), made as the property makes it
 * (for it and the ancestors it needs, kept in their `_id`) when every object involved is of the
 * known class with string types and names; else the property. */
static PyObject *
code_id(PyObject *obj)
{
    PyObject *chain[64], *node = obj;
    int n = 0;
    for (;;) { /* up to the first object whose id is made, or a root */
        PyObject *id = SLOT(node, C_ID);
        if (id == NULL) /* (unset: the property raises) */
            return PyObject_GetAttr(obj, s_id);
        if (id != Py_None)
            break;
        if (n == 64)
            return PyObject_GetAttr(obj, s_id);
        chain[n++] = node;
        PyObject *parent = SLOT(node, C_PARENT);
        if (parent == Py_None)
            break;
        if (parent == NULL || Py_TYPE(parent) != co_type)
            return PyObject_GetAttr(obj, s_id);
        node = parent;
    }
    for (int i = n - 1; i >= 0; i--) { /* down, each made from its parent's */
        PyObject *o = chain[i], *type = SLOT(o, C_TYPE), *name = SLOT(o, C_NAME),
                 *parent = SLOT(o, C_PARENT), *made;
        if (type == NULL || name == NULL || !PyUnicode_CheckExact(type) ||
            !PyUnicode_CheckExact(name))
            return PyObject_GetAttr(obj, s_id);
        if (parent == Py_None)
            made = Py_NewRef(name);
        else {
            PyObject *parent_type = SLOT(parent, C_TYPE), *parent_id = SLOT(parent, C_ID);
            if (parent_type == NULL || !PyUnicode_CheckExact(parent_type) || parent_id == NULL ||
                !PyUnicode_CheckExact(parent_id))
                return PyObject_GetAttr(obj, s_id);
            if (nameless(parent_type))
                made = Py_NewRef(name);
            else {
                const char *sep;
                if (PyUnicode_CompareWithASCIIString(type, "function") == 0) {
                    PyObject *stat = SLOT(o, C_STATIC);
                    int is_static = stat == NULL ? -1 : PyObject_IsTrue(stat);
                    if (is_static < 0) {
                        PyErr_Clear();
                        return PyObject_GetAttr(obj, s_id);
                    }
                    sep = is_static ? "." : "#";
                }
                else if (PyUnicode_CompareWithASCIIString(parent_type, "package") == 0)
                    sep = "/";
                else if (PyUnicode_CompareWithASCIIString(parent_type, "class") == 0)
                    sep = "::";
                else
                    sep = "/";
                if ((made = join3(parent_id, sep, name)) == NULL)
                    return NULL;
            }
        }
        Py_XSETREF(SLOT(o, C_ID), made);
    }
    return Py_NewRef(SLOT(obj, C_ID));
}

/* `CodeObject.fqid` of a code object of the known class (new ref), made as the property makes
 * it (kept in `_fqid`) */
static PyObject *
code_fqid(PyObject *obj)
{
    PyObject *type = SLOT(obj, C_TYPE);
    if (type == NULL || !PyUnicode_CheckExact(type))
        return PyObject_GetAttr(obj, s_fqid);
    PyObject *id = code_id(obj);
    if (id == NULL)
        return NULL;
    if (!PyUnicode_CheckExact(id)) {
        Py_DECREF(id);
        return PyObject_GetAttr(obj, s_fqid);
    }
    PyObject *made = join3(type, ":", id);
    Py_DECREF(id);
    if (made == NULL)
        return NULL;
    Py_XSETREF(SLOT(obj, C_FQID), Py_NewRef(made));
    return made;
}

/* `obj.<name>` (new ref): a `CodeObject`'s attribute read from its slot (`fqid` and `id` from
 * `_fqid` and `_id`, made here first as their properties make them), anything else by
 * attribute. */
static PyObject *
attr(PyObject *obj, PyObject *name)
{
    if (Py_TYPE(obj) == co_type) {
        int i = name == s_fqid      ? C_FQID
                : name == s_id       ? C_ID
                : name == s_type     ? C_TYPE
                : name == s_parent   ? C_PARENT
                : name == s_name     ? C_NAME
                : name == s_labels   ? C_LABELS
                : name == s_static   ? C_STATIC
                : name == s_location ? C_LOCATION
                                     : -1;
        if (i >= 0) {
            PyObject *value = SLOT(obj, i);
            if (value != NULL && (value != Py_None || i > C_ID))
                return Py_NewRef(value);
            if (value == Py_None)
                return i == C_FQID ? code_fqid(obj) : code_id(obj);
        }
    }
    return PyObject_GetAttr(obj, name);
}

/* ------------------------------------------------------------------ the walk */

typedef struct {
    PyObject *node;    /* NULL: closes the frame of `agg` */
    PyObject *co;      /* the parent's code object, or NULL */
    PyObject *request; /* the enclosing request row, or NULL */
    PyObject *caller;  /* the calling function's fqid, or NULL */
    PyObject *agg;     /* the calling function's aggregate, or NULL */
    int in_http;
} Entry;

typedef struct {
    Entry *items;
    Py_ssize_t size, capacity;
} Stack;

/* Pushes an entry, taking new references to its objects. */
static int
push(Stack *stack, PyObject *node, PyObject *co, PyObject *request, PyObject *caller,
     PyObject *agg, int in_http)
{
    if (stack->size == stack->capacity) {
        Py_ssize_t capacity = stack->capacity ? stack->capacity * 2 : 256;
        Entry *items = realloc(stack->items, (size_t)capacity * sizeof(Entry));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        stack->items = items;
        stack->capacity = capacity;
    }
    Entry *e = &stack->items[stack->size++];
    e->node = Py_XNewRef(node);
    e->co = Py_XNewRef(co);
    e->request = Py_XNewRef(request);
    e->caller = Py_XNewRef(caller);
    e->agg = Py_XNewRef(agg);
    e->in_http = in_http;
    return 0;
}

static void
clear_entry(Entry *e)
{
    Py_XDECREF(e->node);
    Py_XDECREF(e->co);
    Py_XDECREF(e->request);
    Py_XDECREF(e->caller);
    Py_XDECREF(e->agg);
}

static void
clear_stack(Stack *stack)
{
    for (Py_ssize_t i = 0; i < stack->size; i++)
        clear_entry(&stack->items[i]);
    free(stack->items);
    stack->items = NULL;
    stack->size = stack->capacity = 0;
}

enum { EK_ID, EK_ELAPSED, EK_HTTP_SERVER, EK_HTTP_CLIENT, EK_SQL_QUERY, EK_METHOD_ID, EK_DEFINED_CLASS, EK_PATH, EK_LINENO, EK_STATIC, EK_PARAMETERS, EK_EXCEPTIONS, N_EVENT_KEYS };

typedef struct {
    int has_http;
    /* The names event fields are read by: the decoder's own key objects once met in an event
     * (orjson makes one object per key text and shares it between the dicts it decodes), so a
     * dict lookup matches by identity instead of comparing strings; until then the interned
     * names (`learn_keys`). Strong references. */
    PyObject *keys[N_EVENT_KEYS];
    int learning; /* how many more calls `learn_keys` may read */
    PyObject *fn_info, *sql_cache, *items, *queries, *pairs, *functions_seen, *params_seen,
        *sql_seen, *function_values, *canonical_sql, *code_object_for, *used, *funcs,
        *log_labels, *log_levels, *by_location,
        *resolve_sql, *sql_key, *code_object, *http_server, *http_client, *log,
        *exceptions, *sides, *class_deps, *package_deps, *names, *parameter_values, *classes,
        *packages, *labels, *class_seen, *package_seen, *locations, *logs, *messages,
        *last_params, *sql_normalized, *sql_tables;
    /* What `Extractor._sql` and `_code_object` read, for the dynamic code objects made here
     * (`new_sql`, `http_code_object`) and an HTTP server request's row (`server_row`):
     * (sql.analyze, _SQL_FACTS, _sql_facts, cmap._children, cmap.roots, fts_sql, cmap,
     * _SERVER_FACTS, _CLIENT_FACTS, routes, HTTP_ROOT, requests, fts_routes,
     * httpServerRequests' values) */
    PyObject *dynamic;
    /* (code object, parent code object) pairs known to be in `pairs`, by address: the pair
     * is not looked up again in this walk (the code objects outlive it) */
    struct {
        void **slots; /* 2 per entry, NULL when empty */
        size_t mask, count;
    } known_pairs;
} Context;

static size_t
pair_slot(const Context *c, void *a, void *b)
{
    uintptr_t h = ((uintptr_t)a >> 4) * 0x9E3779B97F4A7C15u ^ ((uintptr_t)b >> 4);
    h ^= h >> 29;
    size_t i = (size_t)h & c->known_pairs.mask;
    while (c->known_pairs.slots[2 * i] != NULL &&
           (c->known_pairs.slots[2 * i] != a || c->known_pairs.slots[2 * i + 1] != b))
        i = (i + 1) & c->known_pairs.mask;
    return i;
}

static int
pair_known(const Context *c, void *a, void *b)
{
    return c->known_pairs.slots != NULL && c->known_pairs.slots[2 * pair_slot(c, a, b)] != NULL;
}

/* Remembers a pair (at most half the table full: it doubles) */
static int
pair_add(Context *c, void *a, void *b)
{
    if (2 * (c->known_pairs.count + 1) > c->known_pairs.mask + 1 || c->known_pairs.slots == NULL) {
        size_t old_size = c->known_pairs.slots == NULL ? 0 : c->known_pairs.mask + 1;
        size_t size = old_size ? 2 * old_size : 256;
        void **old = c->known_pairs.slots;
        c->known_pairs.slots = calloc(2 * size, sizeof(void *));
        if (c->known_pairs.slots == NULL) {
            c->known_pairs.slots = old;
            PyErr_NoMemory();
            return -1;
        }
        c->known_pairs.mask = size - 1;
        for (size_t i = 0; i < old_size; i++)
            if (old[2 * i] != NULL) {
                size_t j = pair_slot(c, old[2 * i], old[2 * i + 1]);
                c->known_pairs.slots[2 * j] = old[2 * i];
                c->known_pairs.slots[2 * j + 1] = old[2 * i + 1];
            }
        free(old);
    }
    size_t i = pair_slot(c, a, b);
    if (c->known_pairs.slots[2 * i] == NULL) {
        c->known_pairs.slots[2 * i] = a;
        c->known_pairs.slots[2 * i + 1] = b;
        c->known_pairs.count++;
    }
    return 0;
}

enum { K_OTHER, K_HTTP_SERVER, K_HTTP_CLIENT, K_SQL, K_FUNCTION };

/* `ev.kind(call)` as `_walk` reads it inline, or -1 on an error */
static int
kind_of(const Context *c, PyObject *call)
{
    int found;
    if ((found = contains(call, c->keys[EK_HTTP_SERVER])) != 0)
        return found < 0 ? -1 : K_HTTP_SERVER;
    if ((found = contains(call, c->keys[EK_HTTP_CLIENT])) != 0)
        return found < 0 ? -1 : K_HTTP_CLIENT;
    if ((found = contains(call, c->keys[EK_SQL_QUERY])) != 0)
        return found < 0 ? -1 : K_SQL;
    if ((found = contains(call, c->keys[EK_METHOD_ID])) != 0)
        return found < 0 ? -1 : K_FUNCTION;
    if ((found = contains(call, c->keys[EK_DEFINED_CLASS])) != 0)
        return found < 0 ? -1 : K_FUNCTION;
    return K_OTHER;
}

/* `_sql_key(call)` (new ref): the usual shapes read here, the others by the Python function */
static PyObject *
sql_key(const Context *c, PyObject *call)
{
    PyObject *query = get(call, c->keys[EK_SQL_QUERY]);
    if (query == NULL)
        return NULL;
    if (PyDict_CheckExact(query)) {
        PyObject *text = PyDict_GetItemWithError(query, s_sql);
        PyObject *database = text == NULL ? NULL : PyDict_GetItemWithError(query, s_database_type);
        if (PyErr_Occurred()) {
            Py_DECREF(query);
            return NULL;
        }
        if (database == NULL)
            database = Py_None;
        if (text != NULL && PyUnicode_CheckExact(text) &&
            (database == Py_None || PyUnicode_CheckExact(database))) {
            if (database != Py_None && PyUnicode_GET_LENGTH(database) == 0)
                database = Py_None; /* (`database or None`) */
            PyObject *key = PyTuple_Pack(2, text, database);
            Py_DECREF(query);
            return key;
        }
    }
    Py_DECREF(query);
    return PyObject_CallOneArg(c->sql_key, call);
}

/* Unpacks a cache entry of `n` items (a tuple), borrowed references into `out`. */
static int
unpack(PyObject *entry, Py_ssize_t n, PyObject **out)
{
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != n) {
        PyErr_SetString(PyExc_TypeError, "extract_walk: a cache entry is not a tuple of its size");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = PyTuple_GET_ITEM(entry, i);
    return 0;
}

/* The names of a list of parameter objects, as `Canonical.function` reads them (new ref), or
 * NULL without an error when `params` is not a list of objects. */
static PyObject *
parameter_names(PyObject *params)
{
    if (!PyList_CheckExact(params))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(params);
    PyObject *names = PyTuple_New(n);
    if (names == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *param = PyList_GET_ITEM(params, i);
        if (!PyDict_Check(param)) {
            Py_DECREF(names);
            return NULL;
        }
        PyObject *name = PyDict_GetItemWithError(param, s_name);
        if (name == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(names);
                return NULL;
            }
            name = Py_None;
        }
        PyTuple_SET_ITEM(names, i, Py_NewRef(name));
    }
    return names;
}

/* `canonical._names(params, parameter_values)`: the names of parameter objects and of their
 * nested properties, read here when every list met is a list and every object a dict (the
 * names gathered first, appended at the end), else by the Python function. 0 or -1. */
static int
names_of(const Context *c, PyObject *params)
{
    PyObject **stack = NULL; /* (borrowed: `params` holds them, and nothing runs to change it) */
    Py_ssize_t size = 0, capacity = 0;
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return -1;
    int rc = -1, usual = 1;
    PyObject *items = params;
    for (;;) {
        if (PyList_Check(items)) {
            if (!PyList_CheckExact(items)) {
                usual = 0;
                break;
            }
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
                PyObject *item = PyList_GET_ITEM(items, i);
                if (!PyDict_Check(item))
                    continue;
                if (!PyDict_CheckExact(item)) {
                    usual = 0;
                    break;
                }
                PyObject *name = PyDict_GetItemWithError(item, s_name);
                if (name == NULL && PyErr_Occurred())
                    goto done;
                if (name != NULL && name != Py_None) {
                    PyObject *text = PyObject_Str(name);
                    int failed = text == NULL || PyList_Append(found, text) < 0;
                    Py_XDECREF(text);
                    if (failed)
                        goto done;
                }
                PyObject *props = PyDict_GetItemWithError(item, s_properties);
                if (props == NULL && PyErr_Occurred())
                    goto done;
                int truthy = props == NULL ? 0 : PyObject_IsTrue(props);
                if (truthy < 0)
                    goto done;
                if (truthy) {
                    if (size == capacity) {
                        Py_ssize_t more = capacity ? 2 * capacity : 16;
                        PyObject **grown = realloc(stack, (size_t)more * sizeof(PyObject *));
                        if (grown == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        stack = grown;
                        capacity = more;
                    }
                    stack[size++] = props;
                }
            }
            if (!usual)
                break;
        }
        if (size == 0)
            break;
        items = stack[--size];
    }
    if (usual) {
        Py_ssize_t n = PyList_GET_SIZE(c->parameter_values);
        rc = PyList_SetSlice(c->parameter_values, n, n, found);
    }
    else {
        PyObject *r = PyObject_CallFunctionObjArgs(c->names, params, c->parameter_values, NULL);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
done:
    free(stack);
    Py_DECREF(found);
    return rc;
}

/* Whether a list of parameters has the names of `last` (a tuple `parameter_names` made, whose
 * pair with the function is in `params_seen`): every parameter an object whose name is the
 * same string as last's, or missing where last's is None. 1, 0 (not the same, or names that
 * are not strings: looked up in `params_seen`) or -1. */
static int
same_names(PyObject *last, PyObject *params)
{
    Py_ssize_t n = PyList_GET_SIZE(params);
    if (!PyTuple_CheckExact(last) || PyTuple_GET_SIZE(last) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *param = PyList_GET_ITEM(params, i);
        if (!PyDict_Check(param))
            return 0;
        PyObject *name = PyDict_GetItemWithError(param, s_name);
        if (name == NULL) {
            if (PyErr_Occurred())
                return -1;
            name = Py_None;
        }
        PyObject *expected = PyTuple_GET_ITEM(last, i);
        if (name == expected)
            continue;
        if (!PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(expected) ||
            PyUnicode_GET_LENGTH(name) != PyUnicode_GET_LENGTH(expected) ||
            PyUnicode_Compare(name, expected) != 0)
            return 0;
    }
    return 1;
}

/* `co.nearest(type)` (new ref): the object or its nearest ancestor of that type, or None */
static PyObject *
nearest(PyObject *co, PyObject *type)
{
    PyObject *node = Py_NewRef(co);
    while (node != Py_None) {
        PyObject *t = attr(node, s_type);
        int found = t == NULL ? -1 : PyObject_RichCompareBool(t, type, Py_EQ);
        Py_XDECREF(t);
        if (found != 0) {
            if (found < 0)
                Py_CLEAR(node);
            return node;
        }
        Py_SETREF(node, attr(node, s_parent));
        if (node == NULL)
            return NULL;
    }
    return node;
}

/* `values.append(obj.id)` for an object that is not None */
static int
append_id(PyObject *values, PyObject *obj)
{
    if (obj == Py_None)
        return 0;
    PyObject *id = attr(obj, s_id);
    int rc = id == NULL ? -1 : PyList_Append(values, id);
    Py_XDECREF(id);
    return rc;
}

/* `Canonical.function(node, co)` for a counted function call, when it adds something: the
 * parameter names (the Python function when `parameters` is not a list of objects), then the
 * function's class, package and labels the first time. */
static int
canonical_function(const Context *c, PyObject *node, PyObject *call, PyObject *co,
                   PyObject *co_id)
{
    int seen = PySet_Contains(c->functions_seen, co_id);
    if (seen < 0)
        return -1;
    PyObject *params = get(call, c->keys[EK_PARAMETERS]);
    if (params == NULL)
        return -1;
    int rc = -1, truthy = PyObject_IsTrue(params);
    PyObject *names = NULL, *key = NULL, *r = NULL, *cls = NULL, *pkg = NULL, *labels = NULL;
    if (truthy < 0 || (seen && !truthy)) { /* (a call of a function seen adds no names) */
        rc = truthy < 0 ? -1 : 0;
        goto done;
    }
    if (truthy && seen && PyList_CheckExact(params)) {
        PyObject *last = PyDict_GetItemWithError(c->last_params, co_id);
        int same = last == NULL ? (PyErr_Occurred() ? -1 : 0) : same_names(last, params);
        if (same != 0) { /* (the names of the function's last call with parameters again) */
            rc = same < 0 ? -1 : 0;
            goto done;
        }
    }
    if (truthy) {
        if ((names = parameter_names(params)) == NULL) {
            if (!PyErr_Occurred() &&
                (r = PyObject_CallFunctionObjArgs(c->function_values, node, co, NULL)) != NULL)
                rc = 0;
            goto done;
        }
        if ((key = PyTuple_Pack(2, co_id, names)) == NULL)
            goto done;
        int known = PySet_Contains(c->params_seen, key);
        if (known < 0)
            goto done;
        if (!known && (PySet_Add(c->params_seen, key) < 0 || names_of(c, params) < 0))
            goto done;
        if (PyDict_SetItem(c->last_params, co_id, names) < 0)
            goto done;
    }
    if (seen) {
        rc = 0;
        goto done;
    }
    if (PySet_Add(c->functions_seen, co_id) < 0 || (cls = nearest(co, s_class)) == NULL ||
        append_id(c->classes, cls) < 0 || (pkg = nearest(co, s_package)) == NULL ||
        append_id(c->packages, pkg) < 0 || (labels = attr(co, s_labels)) == NULL)
        goto done;
    truthy = PyObject_IsTrue(labels);
    if (truthy < 0)
        goto done;
    if (truthy) {
        Py_XSETREF(r, PyObject_CallMethodOneArg(c->labels, s_extend, labels));
        if (r == NULL)
            goto done;
    }
    rc = 0;
done:
    Py_DECREF(params);
    Py_XDECREF(names);
    Py_XDECREF(key);
    Py_XDECREF(r);
    Py_XDECREF(cls);
    Py_XDECREF(pkg);
    Py_XDECREF(labels);
    return rc;
}

/* `Canonical._side(co)` (borrowed from `sides`, which keeps it): the ids of the child of the
 * root on the path from `co` up (None when `co` is a root) and of the root, made once. */
static PyObject *
side_of(const Context *c, PyObject *co, PyObject *co_id)
{
    PyObject *side = PyDict_GetItemWithError(c->sides, co_id);
    if (side != NULL || PyErr_Occurred())
        return side;
    PyObject *child = NULL, *node = Py_NewRef(co), *parent;
    while ((parent = attr(node, s_parent)) != NULL && parent != Py_None) {
        Py_XSETREF(child, node);
        node = parent;
    }
    if (parent != NULL) {
        Py_DECREF(parent); /* (None) */
        PyObject *cls = child == NULL ? Py_NewRef(Py_None) : attr(child, s_id);
        PyObject *pkg = cls == NULL ? NULL : attr(node, s_id);
        if (pkg != NULL) {
            PyObject *made = PyTuple_Pack(2, cls, pkg);
            if (made != NULL && PyDict_SetItem(c->sides, co_id, made) == 0)
                side = made; /* (borrowed: `sides` holds it) */
            Py_XDECREF(made);
        }
        Py_XDECREF(cls);
        Py_XDECREF(pkg);
    }
    Py_XDECREF(child);
    Py_DECREF(node);
    return side;
}

/* {"caller": caller, "callee": callee} appended to `values` unless `seen`, the set of the
 * (caller, callee) pairs of strings appended, has the pair (`Canonical._depend`) */
static int
append_dependency(PyObject *values, PyObject *seen, PyObject *caller, PyObject *callee)
{
    int rc;
    if (PyUnicode_CheckExact(caller) && PyUnicode_CheckExact(callee)) {
        PyObject *pair = PyTuple_Pack(2, caller, callee);
        if (pair == NULL)
            return -1;
        int known = PySet_Contains(seen, pair);
        if (known != 0) {
            Py_DECREF(pair);
            return known < 0 ? -1 : 0;
        }
        rc = PySet_Add(seen, pair);
        Py_DECREF(pair);
        if (rc < 0)
            return -1;
    }
    PyObject *item = PyDict_New();
    rc = -1;
    if (item != NULL && PyDict_SetItem(item, s_caller, caller) == 0 &&
        PyDict_SetItem(item, s_callee, callee) == 0)
        rc = PyList_Append(values, item);
    Py_XDECREF(item);
    return rc;
}

/* `Canonical.dependency(co, parent_co)` for a pair not in `pairs` yet: the pair added, the
 * class and package dependencies appended. */
static int
dependency(const Context *c, PyObject *co, PyObject *co_id, PyObject *parent_co)
{
    PyObject *parent_id = ID(parent_co);
    if (parent_id == NULL)
        return -1;
    int rc = -1;
    PyObject *pair = PyTuple_Pack(2, co_id, parent_id);
    if (pair == NULL || PySet_Add(c->pairs, pair) < 0)
        goto done;
    PyObject *mine = side_of(c, co, co_id);
    if (mine == NULL)
        goto done;
    Py_INCREF(mine);
    PyObject *theirs = side_of(c, parent_co, parent_id);
    if (theirs == NULL) {
        Py_DECREF(mine);
        goto done;
    }
    Py_INCREF(theirs);
    if (!PyTuple_Check(mine) || PyTuple_GET_SIZE(mine) != 2 || !PyTuple_Check(theirs) ||
        PyTuple_GET_SIZE(theirs) != 2)
        PyErr_SetString(PyExc_TypeError, "extract_walk: a side is not a pair");
    else {
        PyObject *cls = PyTuple_GET_ITEM(mine, 0), *pkg = PyTuple_GET_ITEM(mine, 1);
        PyObject *their_cls = PyTuple_GET_ITEM(theirs, 0);
        PyObject *their_pkg = PyTuple_GET_ITEM(theirs, 1);
        int differ = 0;
        if (cls != Py_None && their_cls != Py_None)
            differ = PyObject_RichCompareBool(cls, their_cls, Py_NE);
        if (differ >= 0 &&
            (!differ || append_dependency(c->class_deps, c->class_seen, their_cls, cls) == 0)) {
            differ = PyObject_RichCompareBool(pkg, their_pkg, Py_NE);
            if (differ >= 0 &&
                (!differ ||
                 append_dependency(c->package_deps, c->package_seen, their_pkg, pkg) == 0))
                rc = 0;
        }
    }
    Py_DECREF(mine);
    Py_DECREF(theirs);
done:
    Py_DECREF(parent_id);
    Py_XDECREF(pair);
    return rc;
}

/* `x in container` for a frozenset (or any container): 1, 0 or -1 */
static int
member(PyObject *container, PyObject *x)
{
    if (PyAnySet_Check(container))
        return PySet_Contains(container, x);
    return PySequence_Contains(container, x);
}

/* `rows.function_row(co, call)` (new ref), `cls` being `co.class_` */
static PyObject *
function_row(const Context *c, PyObject *co, PyObject *call, PyObject *cls)
{
    PyObject *defined = NULL, *class_name = NULL, *name = NULL, *cls_id = NULL, *stat = NULL,
             *location = NULL, *labels = NULL, *joined = NULL, *sep = NULL, *row = NULL;
    if ((defined = get(call, c->keys[EK_DEFINED_CLASS])) == NULL)
        goto done;
    int truthy = PyObject_IsTrue(defined);
    if (truthy < 0)
        goto done;
    if (truthy)
        class_name = PyObject_Str(defined);
    else if (cls != Py_None) {
        PyObject *cls_name = attr(cls, s_name);
        class_name = cls_name == NULL ? NULL : PyObject_Str(cls_name);
        Py_XDECREF(cls_name);
    }
    else
        class_name = PyUnicode_FromString("");
    if (class_name == NULL || (name = attr(co, s_name)) == NULL)
        goto done;
    cls_id = cls != Py_None ? attr(cls, s_id) : PyUnicode_FromString("");
    if (cls_id == NULL || (stat = attr(co, s_static)) == NULL)
        goto done;
    int is_static = PyObject_IsTrue(stat);
    if (is_static < 0 || (location = attr(co, s_location)) == NULL ||
        (labels = attr(co, s_labels)) == NULL || (sep = PyUnicode_FromString(",")) == NULL ||
        (joined = PyUnicode_Join(sep, labels)) == NULL)
        goto done;
    PyObject *flag = PyLong_FromLong(is_static ? 1 : 0);
    if (flag == NULL)
        goto done;
    row = PyTuple_Pack(11, s_function, name, cls_id, class_name, name, flag, location, joined,
                       Py_None, Py_None, Py_None);
    Py_DECREF(flag);
done:
    Py_XDECREF(defined);
    Py_XDECREF(class_name);
    Py_XDECREF(name);
    Py_XDECREF(cls_id);
    Py_XDECREF(stat);
    Py_XDECREF(location);
    Py_XDECREF(labels);
    Py_XDECREF(joined);
    Py_XDECREF(sep);
    return row;
}

/* `rows.is_log_call(call, co)`: 1, 0 or -1 */
static int
is_log_call(const Context *c, PyObject *call, PyObject *co)
{
    PyObject *labels = attr(co, s_labels);
    PyObject *it = labels == NULL ? NULL : PyObject_GetIter(labels);
    Py_XDECREF(labels);
    if (it == NULL)
        return -1;
    int found = 0; /* (every label is hashed, as `intersection` does) */
    PyObject *label;
    while ((label = PyIter_Next(it)) != NULL) {
        int in = member(c->log_labels, label);
        Py_DECREF(label);
        if (in < 0) {
            Py_DECREF(it);
            return -1;
        }
        found |= in;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return -1;
    if (found)
        return 1;
    PyObject *defined = get(call, c->keys[EK_DEFINED_CLASS]);
    if (defined == NULL)
        return -1;
    int truthy = PyObject_IsTrue(defined);
    PyObject *cls = truthy < 0 ? NULL
                    : truthy  ? PyObject_Str(defined)
                              : PyUnicode_FromString("");
    Py_DECREF(defined);
    if (cls == NULL)
        return -1;
    int logger = PyUnicode_CompareWithASCIIString(cls, "logging.Logger") == 0 ||
                 PyUnicode_CompareWithASCIIString(cls, "Logger") == 0;
    Py_DECREF(cls);
    if (!logger)
        return 0;
    PyObject *method = get(call, c->keys[EK_METHOD_ID]);
    if (method == NULL)
        return -1;
    found = member(c->log_levels, method);
    Py_DECREF(method);
    return found;
}

#define MAX_LOCATIONS 16384 /* (a full `locations` is emptied) */

/* The code object of a function call found by its location, as `ClassMap._function_for` looks
 * first (new ref), or NULL: not found (or an error raised). */
static PyObject *
function_at(const Context *c, PyObject *call)
{
    if (!PyDict_CheckExact(call))
        return NULL;
    PyObject *path = PyDict_GetItemWithError(call, c->keys[EK_PATH]);
    if (path == NULL || path == Py_None)
        return NULL;
    PyObject *method = PyDict_GetItemWithError(call, c->keys[EK_METHOD_ID]);
    if (method == NULL && PyErr_Occurred())
        return NULL;
    PyObject *lineno = PyDict_GetItemWithError(call, c->keys[EK_LINENO]);
    if (lineno == NULL && PyErr_Occurred())
        return NULL;
    PyObject *method_id = method == NULL ? PyUnicode_FromString("") : PyObject_Str(method);
    if (method_id == NULL)
        return NULL;
    PyObject *key = NULL, *found = NULL;
    if (lineno != NULL && lineno != Py_None) { /* f"{path}:{lineno}" */
        /* a str path and an int line, the usual, are kept in `locations` (an int's text is its
         * value's; a bool or a float equal to it would make another text) */
        PyObject *place = PyUnicode_CheckExact(path) && PyLong_CheckExact(lineno)
                              ? PyTuple_Pack(2, path, lineno)
                              : NULL;
        if (place == NULL && PyErr_Occurred()) {
            Py_DECREF(method_id);
            return NULL;
        }
        if (place != NULL) {
            key = Py_XNewRef(PyDict_GetItemWithError(c->locations, place));
            if (key == NULL && PyErr_Occurred()) {
                Py_DECREF(place);
                Py_DECREF(method_id);
                return NULL;
            }
        }
        if (key == NULL) {
            PyObject *left = PyObject_Format(path, NULL), *right = PyObject_Format(lineno, NULL);
            PyObject *half = left == NULL ? NULL : PyUnicode_Concat(left, s_colon);
            key = half == NULL || right == NULL ? NULL : PyUnicode_Concat(half, right);
            Py_XDECREF(left);
            Py_XDECREF(right);
            Py_XDECREF(half);
            if (key != NULL && place != NULL) {
                if (PyDict_GET_SIZE(c->locations) >= MAX_LOCATIONS)
                    PyDict_Clear(c->locations);
                if (PyDict_SetItem(c->locations, place, key) < 0)
                    Py_CLEAR(key);
            }
        }
        Py_XDECREF(place);
    }
    else
        key = PyObject_Str(path);
    PyObject *candidates = key == NULL ? NULL : PyDict_GetItemWithError(c->by_location, key);
    if (candidates != NULL && PyList_CheckExact(candidates)) {
        for (Py_ssize_t i = 0; found == NULL && i < PyList_GET_SIZE(candidates); i++) {
            PyObject *candidate = Py_NewRef(PyList_GET_ITEM(candidates, i));
            PyObject *name = attr(candidate, s_name);
            int same = name == NULL ? -1 : PyObject_RichCompareBool(name, method_id, Py_EQ);
            Py_XDECREF(name);
            if (same > 0)
                found = Py_NewRef(candidate);
            Py_DECREF(candidate);
            if (same < 0)
                break;
        }
    }
    Py_XDECREF(key);
    Py_DECREF(method_id);
    return found;
}

/* A function's aggregate, `[0, 0.0, 0.0, 0.0, 0]` (new ref) */
static PyObject *
new_aggregate(void)
{
    PyObject *agg = PyList_New(5);
    if (agg == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < 5; i++) {
        PyObject *value = i == 0 || i == 4 ? PyLong_FromLong(0) : PyFloat_FromDouble(0.0);
        if (value == NULL) {
            Py_DECREF(agg);
            return NULL;
        }
        PyList_SET_ITEM(agg, i, value);
    }
    return agg;
}

/* `Extractor._function(call)` (new ref): the call's code object (`cmap.code_object_for`,
 * marked used), fqid, whether it logs and its aggregate; the function's row (and its class's)
 * made when its fqid is first met. */
static PyObject *
resolve_function(const Context *c, PyObject *call)
{
    PyObject *co = NULL, *co_id = NULL, *fqid = NULL, *agg = NULL, *cls = NULL, *row = NULL,
             *cls_fqid = NULL, *result = NULL;
    co = function_at(c, call); /* (the common case; the rest, and errors, as Python has them) */
    if (co == NULL && PyErr_Occurred())
        PyErr_Clear();
    if ((co == NULL && (co = PyObject_CallOneArg(c->code_object_for, call)) == NULL) ||
        (co_id = ID(co)) == NULL ||
        PyDict_SetItem(c->used, co_id, co) < 0 || (fqid = attr(co, s_fqid)) == NULL)
        goto done;
    agg = PyDict_GetItemWithError(c->funcs, fqid);
    if (agg != NULL)
        Py_INCREF(agg);
    else {
        if (PyErr_Occurred() ||
            (agg = new_aggregate()) == NULL ||
            PyDict_SetItem(c->funcs, fqid, agg) < 0 || (cls = nearest(co, s_class)) == NULL ||
            (row = function_row(c, co, call, cls)) == NULL || PyDict_SetItem(c->items, fqid, row) < 0)
            goto done;
        if (cls != Py_None) {
            PyObject *cls_id = NULL, *plain = NULL;
            int known = -1;
            if ((cls_fqid = attr(cls, s_fqid)) != NULL &&
                (cls_id = attr(cls, s_id)) != NULL &&
                (known = PyDict_Contains(c->items, cls_fqid)) == 0) {
                plain = PyTuple_Pack(11, s_class, cls_id, Py_None, Py_None, Py_None, Py_None,
                                     Py_None, Py_None, Py_None, Py_None, Py_None);
                known = plain == NULL ? -1 : PyDict_SetItem(c->items, cls_fqid, plain);
            }
            Py_XDECREF(cls_id);
            Py_XDECREF(plain);
            if (known < 0)
                goto done;
        }
    }
    int logs = is_log_call(c, call, co);
    if (logs < 0)
        goto done;
    result = PyTuple_Pack(4, co, fqid, logs ? Py_True : Py_False, agg);
done:
    Py_XDECREF(co);
    Py_XDECREF(co_id);
    Py_XDECREF(fqid);
    Py_XDECREF(agg);
    Py_XDECREF(cls);
    Py_XDECREF(row);
    Py_XDECREF(cls_fqid);
    return result;
}

/* The interned names of `Context.keys`, by index */
static PyObject **const interned_keys[N_EVENT_KEYS] = {
    &s_id, &s_elapsed, &s_http_server_request, &s_http_client_request, &s_sql_query,
    &s_method_id, &s_defined_class, &s_path, &s_lineno, &s_static, &s_parameters, &s_exceptions};

static void
init_keys(Context *c)
{
    for (int i = 0; i < N_EVENT_KEYS; i++)
        c->keys[i] = Py_NewRef(*interned_keys[i]);
}

static void
clear_keys(Context *c)
{
    for (int i = 0; i < N_EVENT_KEYS; i++)
        Py_CLEAR(c->keys[i]);
}

/* Adopts the keys of an event (a dict) equal to a name but other objects than it */
static void
learn_keys(Context *c, PyObject *event)
{
    if (!PyDict_CheckExact(event))
        return;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(event, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))
            continue;
        for (int i = 0; i < N_EVENT_KEYS; i++) {
            PyObject *name = c->keys[i];
            if (name == key)
                break;
            if (name == *interned_keys[i] && PyUnicode_GET_LENGTH(name) == PyUnicode_GET_LENGTH(key) &&
                PyUnicode_Compare(name, key) == 0) {
                Py_SETREF(c->keys[i], Py_NewRef(key));
                break;
            }
        }
    }
}

#define MAX_TEXT 2000 /* rows.MAX_TEXT */

/* `Extractor._log(call, event_id, request_id, fqid, caller)` of a call whose `parameters` is a
 * list or None: its message (`rows.log_message`), row and words; 1 done, 0 left to the Python
 * `_log` (other parameters, a dict subclass), -1 on an error. */
static int
log_call(const Context *c, PyObject *call, PyObject *event_id, PyObject *request_id,
         PyObject *fqid, PyObject *caller)
{
    PyObject *params = get(call, c->keys[EK_PARAMETERS]);
    if (params == NULL)
        return -1;
    if (params == Py_None) { /* (`or ()`) */
        Py_DECREF(params);
        return 1;
    }
    if (!PyList_CheckExact(params)) {
        Py_DECREF(params);
        return 0;
    }
    int rc = -1;
    PyObject *value = NULL, *text = NULL, *message = NULL, *method = NULL, *level = NULL,
             *row = NULL, *words = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(params); i++) {
        PyObject *param = PyList_GET_ITEM(params, i);
        if (!PyDict_Check(param))
            continue;
        if (!PyDict_CheckExact(param)) {
            rc = 0;
            goto done;
        }
        PyObject *name = PyDict_GetItemWithError(param, s_name);
        if (name == NULL && PyErr_Occurred())
            goto done;
        if (name != NULL) {
            int is_self = PyObject_RichCompareBool(name, s_self, Py_EQ);
            int is_cls = is_self != 0 ? is_self : PyObject_RichCompareBool(name, s_cls, Py_EQ);
            if (is_cls < 0)
                goto done;
            if (is_cls)
                continue;
        }
        value = Py_XNewRef(PyDict_GetItemWithError(param, s_value));
        if (value == NULL && PyErr_Occurred())
            goto done;
        break;
    }
    if (value == NULL || value == Py_None) { /* no message */
        rc = 1;
        goto done;
    }
    if ((text = PyObject_Str(value)) == NULL)
        goto done;
    if (PyUnicode_GET_LENGTH(text) <= MAX_TEXT)
        message = Py_NewRef(text);
    else {
        PyObject *head = PyUnicode_Substring(text, 0, MAX_TEXT);
        message = head == NULL ? NULL : PyUnicode_Concat(head, s_ellipsis);
        Py_XDECREF(head);
        if (message == NULL)
            goto done;
    }
    if ((method = get(call, c->keys[EK_METHOD_ID])) == NULL)
        goto done;
    int truthy = PyObject_IsTrue(method);
    if (truthy < 0 ||
        (level = truthy ? PyObject_Str(method) : PyUnicode_FromString("")) == NULL ||
        (row = PyTuple_Pack(6, event_id, request_id, level, fqid, caller, message)) == NULL ||
        PyList_Append(c->logs, row) < 0 ||
        (words = PyUnicode_Substring(message, 0, 200)) == NULL ||
        PyDict_SetDefault(c->messages, words, Py_None) == NULL)
        goto done;
    rc = 1;
done:
    Py_DECREF(params);
    Py_XDECREF(value);
    Py_XDECREF(text);
    Py_XDECREF(message);
    Py_XDECREF(method);
    Py_XDECREF(level);
    Py_XDECREF(row);
    Py_XDECREF(words);
    return rc;
}

/* One call of the walk: `_walk`'s loop body for a node. */
/* ------------------------------------------------------------------ dynamic code objects */

/* `ClassMap.child(parent, type, name)` (parent None: a root) of a child without labels,
 * location or static flag, as SQL and HTTP calls' dynamic objects are (new ref): the one in
 * `children` (the ClassMap's `_children`, by `(id(parent), type, name)`), else made as
 * `CodeObject(type, name, parent)` makes it -- its slots set here, not by its `__init__` --
 * and kept and listed as `child` does. NULL without an error: declined (the caller asks the
 * Python), for a parent of another class or slots of unexpected types. */
static PyObject *
dynamic_child(PyObject *children, PyObject *roots, PyObject *parent, PyObject *type,
              PyObject *name)
{
    if (co_type == NULL || (parent != Py_None && Py_TYPE(parent) != co_type))
        return NULL;
    PyObject *parent_id = ID(parent);
    PyObject *key = parent_id == NULL ? NULL : PyTuple_Pack(3, parent_id, type, name);
    Py_XDECREF(parent_id);
    if (key == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(children, key);
    if (found != NULL || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(found);
    }
    PyObject *siblings = parent == Py_None ? roots : SLOT(parent, C_CHILDREN);
    if (siblings == NULL || !PyList_CheckExact(siblings)) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *obj = co_type->tp_alloc(co_type, 0);
    PyObject *kids = PyList_New(0), *labels = PyList_New(0), *extra = PyDict_New();
    if (obj == NULL || kids == NULL || labels == NULL || extra == NULL) {
        Py_XDECREF(obj);
        Py_XDECREF(kids);
        Py_XDECREF(labels);
        Py_XDECREF(extra);
        Py_DECREF(key);
        return NULL;
    }
    /* (`__init__`'s values: no location, not static, no labels, no extra fields) */
    SLOT(obj, C_TYPE) = Py_NewRef(type);
    SLOT(obj, C_NAME) = Py_NewRef(name);
    SLOT(obj, C_PARENT) = Py_NewRef(parent);
    SLOT(obj, C_CHILDREN) = kids;
    SLOT(obj, C_LOCATION) = Py_NewRef(Py_None);
    SLOT(obj, C_STATIC) = Py_NewRef(Py_False);
    SLOT(obj, C_LABELS) = labels;
    SLOT(obj, C_EXTRA) = extra;
    SLOT(obj, C_ID) = Py_NewRef(Py_None);
    SLOT(obj, C_FQID) = Py_NewRef(Py_None);
    int failed = PyDict_SetItem(children, key, obj) < 0 || PyList_Append(siblings, obj) < 0;
    Py_DECREF(key);
    if (failed)
        Py_CLEAR(obj);
    return obj;
}

#define N_DYNAMIC 14
#define D(i) PyTuple_GET_ITEM(c->dynamic, i)

/* Checks `Context.dynamic`: 1 when the dynamic objects may be made here, 0 when not (the
 * ClassMap keeps `by_fqid`, which `child` then fills), -1 on an error. */
static int
unpack_dynamic(Context *c)
{
    if (!PyTuple_CheckExact(c->dynamic) || PyTuple_GET_SIZE(c->dynamic) != N_DYNAMIC) {
        PyErr_SetString(PyExc_TypeError, "extract_walk: the dynamic context is not a tuple");
        return -1;
    }
    if (!PyDict_CheckExact(D(3)) || !PyList_CheckExact(D(4)))
        return 0;
    PyObject *by_fqid = PyObject_GetAttr(D(6), s_by_fqid);
    if (by_fqid == NULL)
        return -1;
    Py_DECREF(by_fqid);
    return by_fqid == Py_None;
}

/* `Extractor._code_object(call)` (new ref) of an HTTP server (`kind` K_HTTP_SERVER) or client
 * request whose facts this process has (`_server_facts`, `_client_facts`: their cache hit
 * for fields of the usual types), its route object made here when first met (`cmap.route`,
 * `cmap.external_route`); NULL without an error: declined (`_code_object` does it). */
static PyObject *
http_code_object(Context *c, PyObject *call, int kind, PyObject **facts_out)
{
    int ok = unpack_dynamic(c);
    if (ok <= 0)
        return NULL;
    PyObject *request = get(call, c->keys[kind == K_HTTP_SERVER ? EK_HTTP_SERVER : EK_HTTP_CLIENT]);
    if (request == NULL)
        return NULL;
    PyObject *key = NULL, *facts = NULL, *route_key = NULL, *co = NULL, *root = NULL,
             *co_id = NULL;
    if (!PyDict_CheckExact(request) || PyDict_GET_SIZE(request) == 0)
        goto done; /* (a client request may be empty; it is then left to the Python) */
    if (kind == K_HTTP_CLIENT) {
        int both = contains(call, c->keys[EK_HTTP_SERVER]);
        if (both != 0)
            goto done;
    }
    static const char *const server_fields[] = {"request_method", "normalized_path_info",
                                                "path_info"};
    static const char *const client_fields[] = {"url", "request_method"};
    const char *const *fields = kind == K_HTTP_SERVER ? server_fields : client_fields;
    Py_ssize_t n = kind == K_HTTP_SERVER ? 3 : 2;
    if ((key = PyTuple_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyDict_GetItemString(request, fields[i]);
        if (value == NULL)
            value = Py_None;
        if (value != Py_None && !PyUnicode_CheckExact(value))
            goto done;
        PyTuple_SET_ITEM(key, i, Py_NewRef(value));
    }
    PyObject *cache = D(kind == K_HTTP_SERVER ? 7 : 8);
    if (!PyDict_CheckExact(cache))
        goto done;
    facts = Py_XNewRef(PyDict_GetItemWithError(cache, key));
    if (facts == NULL || !PyTuple_CheckExact(facts) ||
        PyTuple_GET_SIZE(facts) != (kind == K_HTTP_SERVER ? 8 : 3))
        goto done;
    route_key = kind == K_HTTP_SERVER
                    ? Py_NewRef(PyTuple_GET_ITEM(facts, 2))
                    : PyTuple_Pack(2, PyTuple_GET_ITEM(facts, 0), PyTuple_GET_ITEM(facts, 1));
    PyObject *routes = D(9);
    if (route_key == NULL || !PyDict_CheckExact(routes))
        goto done;
    co = Py_XNewRef(PyDict_GetItemWithError(routes, route_key));
    if (co == NULL) {
        if (PyErr_Occurred())
            goto done;
        PyObject *children = D(3), *roots = D(4);
        root = kind == K_HTTP_SERVER
                   ? dynamic_child(children, roots, Py_None, s_http, D(10))
                   : dynamic_child(children, roots, Py_None, s_external_service,
                                   PyTuple_GET_ITEM(facts, 0));
        if (root == NULL)
            goto done;
        co = kind == K_HTTP_SERVER
                 ? dynamic_child(children, roots, root, s_route, route_key)
                 : dynamic_child(children, roots, root, s_external_route,
                                 PyTuple_GET_ITEM(facts, 1));
        if (co == NULL || PyDict_SetItem(routes, route_key, co) < 0)
            goto done;
    }
    if ((co_id = ID(co)) == NULL || PyDict_SetItem(c->used, co_id, co) < 0)
        Py_CLEAR(co);
    else
        *facts_out = Py_NewRef(facts);
done:
    if (co != NULL && co_id == NULL)
        Py_CLEAR(co); /* (declined or failed before it was marked used) */
    Py_DECREF(request);
    Py_XDECREF(key);
    Py_XDECREF(facts);
    Py_XDECREF(route_key);
    Py_XDECREF(root);
    Py_XDECREF(co_id);
    return co;
}

/* `ev.status_code(ret)` (new ref) for the usual shapes: NULL without an error when declined
 * (a status that is not an int, objects of dict subclasses). */
static PyObject *
status_of(PyObject *ret)
{
    if (ret == Py_None)
        Py_RETURN_NONE;
    if (!PyDict_CheckExact(ret))
        return NULL;
    if (PyDict_GET_SIZE(ret) == 0)
        Py_RETURN_NONE;
    PyObject *resp = PyDict_GetItemWithError(ret, s_http_server_response);
    if (resp == NULL && PyErr_Occurred())
        return NULL;
    int truthy = resp == NULL ? 0 : PyObject_IsTrue(resp);
    if (truthy < 0)
        return NULL;
    if (!truthy) {
        resp = PyDict_GetItemWithError(ret, s_http_client_response);
        if (resp == NULL && PyErr_Occurred())
            return NULL;
    }
    if (resp == NULL || !PyDict_Check(resp))
        Py_RETURN_NONE;
    if (!PyDict_CheckExact(resp))
        return NULL;
    PyObject *value = PyDict_GetItemWithError(resp, s_status_code);
    if (value == NULL && !PyErr_Occurred())
        value = PyDict_GetItemWithError(resp, s_status);
    if (value == NULL && PyErr_Occurred())
        return NULL;
    if (value == NULL || value == Py_None)
        Py_RETURN_NONE;
    return PyLong_CheckExact(value) ? Py_NewRef(value) : NULL; /* (`int(value)`: the same) */
}

/* `"(a,b)"` of `canonical._request`: the sorted names (`str(m.get("name"))`) of the objects of
 * a request's `message` list (new ref); NULL without an error when declined (a message that
 * is not a list or None, objects of dict subclasses). */
static PyObject *
request_parameters(PyObject *message)
{
    PyObject *names = PyList_New(0);
    if (names == NULL)
        return NULL;
    if (message != NULL && message != Py_None) {
        if (!PyList_CheckExact(message)) {
            Py_DECREF(names);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(message); i++) {
            PyObject *m = PyList_GET_ITEM(message, i);
            if (!PyDict_Check(m))
                continue;
            if (!PyDict_CheckExact(m)) {
                Py_DECREF(names);
                return NULL;
            }
            PyObject *name = PyDict_GetItemWithError(m, s_name);
            if (name == NULL && PyErr_Occurred()) {
                Py_DECREF(names);
                return NULL;
            }
            PyObject *text = PyObject_Str(name == NULL ? Py_None : name);
            int failed = text == NULL || PyList_Append(names, text) < 0;
            Py_XDECREF(text);
            if (failed) {
                Py_DECREF(names);
                return NULL;
            }
        }
    }
    PyObject *sep = NULL, *joined = NULL, *out = NULL;
    if (PyList_Sort(names) == 0 && (sep = PyUnicode_FromString(",")) != NULL &&
        (joined = PyUnicode_Join(sep, names)) != NULL)
        out = PyUnicode_FromFormat("(%U)", joined);
    Py_DECREF(names);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    return out;
}

/* `Extractor._http_server(node, call, event_id, ms, counted)` (new ref: the request's row) of
 * a request whose `facts` `http_code_object` found, with `Canonical.http_server` when counted;
 * NULL without an error: declined before anything was done (`_http_server` does it). */
static PyObject *
server_row(Context *c, PyObject *call, PyObject *ret, PyObject *event_id, PyObject *ms,
           int counted, PyObject *facts)
{
    if (facts == NULL || !PyTuple_CheckExact(facts) || PyTuple_GET_SIZE(facts) != 8 ||
        !PyDict_CheckExact(call) || !PyList_CheckExact(D(11)) || !PyDict_CheckExact(D(12)) ||
        !PyList_CheckExact(D(13)))
        return NULL;
    PyObject *status = status_of(ret), *message = NULL, *parameters = NULL, *row = NULL,
             *value = NULL, *zero = NULL, *zero_ms = NULL;
    if (status == NULL)
        return NULL;
    if (counted) {
        message = PyDict_GetItemWithError(call, s_message);
        if ((message == NULL && PyErr_Occurred()) ||
            (parameters = request_parameters(message)) == NULL)
            goto done;
    }
    PyObject *const *f = &PyTuple_GET_ITEM(facts, 0);
    /* [event_id, method, template, path, status, ms, 0, 0.0, shape] */
    if ((zero = PyLong_FromLong(0)) == NULL || (zero_ms = PyFloat_FromDouble(0.0)) == NULL ||
        (row = PyList_New(9)) == NULL)
        goto done;
    PyObject *fields[9] = {event_id, f[0], f[1], f[5], status, ms, zero, zero_ms, f[3]};
    for (int i = 0; i < 9; i++)
        PyList_SET_ITEM(row, i, Py_NewRef(fields[i]));
    if (PyList_Append(D(11), row) < 0 || PyDict_SetDefault(c->items, f[6], f[7]) == NULL ||
        PyDict_SetDefault(D(12), f[2], Py_None) == NULL)
        goto failed;
    if (counted) {
        if ((value = PyDict_New()) == NULL || PyDict_SetItem(value, s_route, f[4]) < 0 ||
            PyDict_SetItem(value, s_parameters, parameters) < 0 ||
            PyDict_SetItem(value, s_status, status) < 0 || PyList_Append(D(13), value) < 0 ||
            names_of(c, message == NULL ? Py_None : message) < 0)
            goto failed;
    }
    goto done;
failed:
    Py_CLEAR(row);
done:
    Py_DECREF(status);
    Py_XDECREF(parameters);
    Py_XDECREF(value);
    Py_XDECREF(zero);
    Py_XDECREF(zero_ms);
    return row;
}

/* `Extractor._sql(key)` (new ref: its `sql_cache` entry) for a SQL text first met in this
 * recording, its analysis asked of `sql.analyze` as there; NULL without an error: declined
 * before anything was done (inputs of other types, or the ClassMap keeps `by_fqid`, which
 * `child` then fills), and the caller calls `_sql`. */
static PyObject *
new_sql(Context *c, PyObject *key)
{
    PyObject *analyze, *facts_cache, *make_facts, *children, *roots, *fts_sql;
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 2 || unpack_dynamic(c) <= 0)
        return NULL;
    analyze = D(0), facts_cache = D(1), make_facts = D(2), children = D(3), roots = D(4);
    fts_sql = D(5);
    if (!PyDict_CheckExact(facts_cache) || !PyDict_CheckExact(fts_sql))
        return NULL;
    PyObject *info = NULL, *facts = NULL, *normalized = NULL, *database = NULL, *co = NULL,
             *co_id = NULL, *fqid = NULL, *entry = NULL, *parts[4];
    if ((info = PyObject_Call(analyze, key, NULL)) == NULL)
        goto done;
    facts = Py_XNewRef(PyDict_GetItemWithError(facts_cache, key));
    if (facts == NULL && PyErr_Occurred())
        goto done;
    if (facts == NULL || !PyTuple_Check(facts) || PyTuple_GET_SIZE(facts) != 4 ||
        PyTuple_GET_ITEM(facts, 0) != info) {
        Py_XDECREF(facts);
        if ((facts = PyObject_CallFunctionObjArgs(make_facts, key, info, NULL)) == NULL)
            goto done;
    }
    if (unpack(facts, 4, parts) < 0 || (normalized = PyObject_GetAttr(info, s_normalized)) == NULL)
        goto done;
    if (!PyUnicode_CheckExact(normalized) ||
        (database = dynamic_child(children, roots, Py_None, s_database, s_database_root)) == NULL ||
        (co = dynamic_child(children, roots, database, s_query, normalized)) == NULL) {
        if (!PyErr_Occurred()) /* (declined: `_sql` does it, asking the same analysis again) */
            entry = PyObject_CallOneArg(c->resolve_sql, key);
        goto done;
    }
    if ((co_id = ID(co)) == NULL || PyDict_SetItem(c->used, co_id, co) < 0 ||
        (fqid = attr(co, s_fqid)) == NULL)
        goto done;
    int known = PyDict_Contains(c->items, fqid);
    if (known < 0)
        goto done;
    if (!known) {
        PyObject *tables = parts[3];
        if (PyDict_SetItem(c->items, fqid, parts[2]) < 0)
            goto done;
        PyObject *seq = PySequence_Fast(tables, "new_sql: tables");
        if (seq == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *pair[2];
            if (unpack(PySequence_Fast_GET_ITEM(seq, i), 2, pair) < 0 ||
                PyDict_SetDefault(c->items, pair[0], pair[1]) == NULL) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
        if (PyDict_SetDefault(fts_sql, normalized, Py_None) == NULL)
            goto done;
    }
    entry = PyTuple_Pack(3, co, fqid, parts[1]);
    if (entry != NULL && PyDict_SetItem(c->sql_cache, key, entry) < 0)
        Py_CLEAR(entry);
done:
    Py_XDECREF(info);
    Py_XDECREF(facts);
    Py_XDECREF(normalized);
    Py_XDECREF(database);
    Py_XDECREF(co);
    Py_XDECREF(co_id);
    Py_XDECREF(fqid);
    if (entry == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_SystemError, "new_sql: no entry");
    return entry;
}

static int
visit(Context *c, Stack *stack, Entry *e, PyObject *nodes, PyObject *codes,
      PyObject *in_order, Py_ssize_t *n_calls)
{
    int rc = -1;
    PyObject *node = e->node;
    PyObject *call = NULL, *ret = NULL, *ms = NULL, *event_id = NULL, *key = NULL,
             *resolved = NULL, *co = NULL, *fqid = NULL, *sql_values = NULL,
             *agg = NULL, *node_id = NULL, *co_id = NULL, *request = NULL, *request_id = NULL,
             *children = NULL, *r = NULL, *raised = NULL, *is_log = NULL, *http_facts = NULL;
    double d = 0.0;

    if (PyList_Append(nodes, node) < 0)
        return -1;
    if ((call = node_get(node, N_CALL, s_call)) == NULL ||
        (ret = node_get(node, N_RET, s_ret)) == NULL || elapsed_ms(ret, c->keys[EK_ELAPSED], &ms, &d) < 0 ||
        (event_id = get(call, c->keys[EK_ID])) == NULL)
        goto done;
    if (c->learning > 0) { /* (the first calls of a walk) */
        c->learning--;
        learn_keys(c, call);
        learn_keys(c, ret);
    }
    int kind = kind_of(c, call);
    if (kind < 0)
        goto done;
    PyObject *parts[4];
    if (kind == K_SQL) {
        if ((key = sql_key(c, call)) == NULL)
            goto done;
        PyObject *cached = PyDict_GetItemWithError(c->sql_cache, key);
        if (cached != NULL)
            resolved = Py_NewRef(cached);
        else if (PyErr_Occurred() ||
                 ((resolved = new_sql(c, key)) == NULL &&
                  (PyErr_Occurred() || (resolved = PyObject_CallOneArg(c->resolve_sql, key)) == NULL)))
            goto done;
        if (unpack(resolved, 3, parts) < 0)
            goto done;
        co = Py_NewRef(parts[0]);
        fqid = Py_NewRef(parts[1]);
        sql_values = Py_NewRef(parts[2]);
    }
    else if (kind == K_FUNCTION) {
        PyObject *fields[5] = {c->keys[EK_DEFINED_CLASS], c->keys[EK_METHOD_ID], c->keys[EK_PATH],
                              c->keys[EK_LINENO], c->keys[EK_STATIC]};
        if ((key = PyTuple_New(5)) == NULL)
            goto done;
        for (int i = 0; i < 5; i++) {
            PyObject *value = get(call, fields[i]);
            if (value == NULL)
                goto done;
            PyTuple_SET_ITEM(key, i, value);
        }
        PyObject *cached = PyDict_GetItemWithError(c->fn_info, key);
        if (cached != NULL)
            resolved = Py_NewRef(cached);
        else if (PyErr_Occurred() ||
                 (resolved = resolve_function(c, call)) == NULL ||
                 PyDict_SetItem(c->fn_info, key, resolved) < 0)
            goto done;
        if (unpack(resolved, 4, parts) < 0)
            goto done;
        co = Py_NewRef(parts[0]);
        fqid = Py_NewRef(parts[1]);
        is_log = Py_NewRef(parts[2]);
        agg = Py_NewRef(parts[3]);
    }
    else {
        if (kind == K_HTTP_SERVER || kind == K_HTTP_CLIENT)
            co = http_code_object(c, call, kind, &http_facts);
        if ((co == NULL && (PyErr_Occurred() ||
                            (co = PyObject_CallOneArg(c->code_object, call)) == NULL)) ||
            (fqid = attr(co, s_fqid)) == NULL)
            goto done;
    }
    if ((node_id = ID(node)) == NULL || PyDict_SetItem(codes, node_id, co) < 0 ||
        PyList_Append(in_order, co) < 0)
        goto done;
    int in_http = e->in_http || kind == K_HTTP_SERVER;
    int counted = in_http || !c->has_http;
    if ((co_id = ID(co)) == NULL)
        goto done;
    if (counted && e->co != NULL && !pair_known(c, co, e->co)) {
        PyObject *parent_id = ID(e->co);
        PyObject *pair = parent_id == NULL ? NULL : PyTuple_Pack(2, co_id, parent_id);
        Py_XDECREF(parent_id);
        int known = pair == NULL ? -1 : PySet_Contains(c->pairs, pair);
        Py_XDECREF(pair);
        if (known < 0)
            goto done;
        if ((!known && dependency(c, co, co_id, e->co) < 0) || pair_add(c, co, e->co) < 0)
            goto done;
    }
    request = Py_XNewRef(e->request);
    if (request != NULL) {
        if ((request_id = item_get(request, 0)) == NULL)
            goto done;
    }
    else
        request_id = Py_NewRef(Py_None);
    PyObject *next_caller = e->caller;
    if (ms != NULL && e->agg != NULL && item_add_float(e->agg, 2, d, ms, -1) < 0)
        goto done;
    PyObject *ms_value = ms != NULL ? ms : Py_None;

    if (kind == K_FUNCTION) {
        ++*n_calls;
        next_caller = fqid;
        if (item_add_int(agg, 0, one) < 0)
            goto done;
        if (ms != NULL) {
            PyObject *open = item_get(agg, 4);
            int frames = open == NULL ? -1 : PyObject_IsTrue(open);
            Py_XDECREF(open);
            if (frames < 0 || (!frames && item_add_float(agg, 1, d, ms, 1) < 0) ||
                item_add_float(agg, 2, d, ms, 1) < 0)
                goto done;
            PyObject *top = item_get(agg, 3);
            if (top == NULL)
                goto done;
            int longer = PyFloat_CheckExact(top) ? d > PyFloat_AS_DOUBLE(top)
                                                 : PyObject_RichCompareBool(ms, top, Py_GT);
            Py_DECREF(top);
            if (longer < 0 || (longer && item_set(agg, 3, Py_NewRef(ms)) < 0))
                goto done;
        }
        if ((children = node_get(node, N_CHILDREN, s_children)) == NULL)
            goto done;
        int has_children = PyObject_IsTrue(children);
        if (has_children < 0)
            goto done;
        if (has_children) {
            if (item_add_int(agg, 4, one) < 0 || push(stack, NULL, NULL, NULL, NULL, agg, 0) < 0)
                goto done;
        }
        if (counted && canonical_function(c, node, call, co, co_id) < 0)
            goto done;
        int logs = PyObject_IsTrue(is_log);
        if (logs < 0)
            goto done;
        if (logs) {
            PyObject *caller = e->caller != NULL ? e->caller : Py_None;
            int logged = log_call(c, call, event_id, request_id, fqid, caller);
            if (logged < 0 ||
                (!logged && (r = PyObject_CallFunctionObjArgs(c->log, call, event_id, request_id,
                                                              fqid, caller, NULL)) == NULL))
                goto done;
            Py_CLEAR(r);
        }
    }
    else if (kind == K_HTTP_SERVER) {
        Py_CLEAR(request);
        request = server_row(c, call, ret, event_id, ms_value, counted, http_facts);
        if (request == NULL &&
            (PyErr_Occurred() ||
             (request = PyObject_CallFunctionObjArgs(c->http_server, node, call, event_id,
                                                     ms_value, counted ? Py_True : Py_False,
                                                     NULL)) == NULL))
            goto done;
    }
    else if (kind == K_SQL) {
        PyObject *caller = e->caller != NULL ? e->caller : Py_None;
        PyObject *row = PyTuple_Pack(5, event_id, request_id, fqid, ms_value, caller);
        int failed = row == NULL || PyList_Append(c->queries, row) < 0;
        Py_XDECREF(row);
        if (failed)
            goto done;
        if (request != NULL) {
            if (item_add_int(request, 6, one) < 0 ||
                (ms != NULL && item_add_float(request, 7, d, ms, 1) < 0))
                goto done;
        }
        if (counted) {
            int seen = PyTuple_Check(sql_values) ? PySet_Contains(c->sql_seen, sql_values) : 0;
            if (seen < 0)
                goto done;
            if (!seen && PyTuple_CheckExact(sql_values) && PyTuple_GET_SIZE(sql_values) == 2 &&
                PyTuple_CheckExact(PyTuple_GET_ITEM(sql_values, 1))) {
                /* `Canonical.sql(normalized, tables)`: the pair kept, its values appended */
                PyObject *tables = PyTuple_GET_ITEM(sql_values, 1);
                if (PySet_Add(c->sql_seen, sql_values) < 0 ||
                    PyList_Append(c->sql_normalized, PyTuple_GET_ITEM(sql_values, 0)) < 0)
                    goto done;
                for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tables); i++)
                    if (PyList_Append(c->sql_tables, PyTuple_GET_ITEM(tables, i)) < 0)
                        goto done;
            }
            else if (!seen) {
                PyObject *args = PySequence_Tuple(sql_values);
                if (args == NULL)
                    goto done;
                r = PyObject_Call(c->canonical_sql, args, NULL);
                Py_DECREF(args);
                if (r == NULL)
                    goto done;
                Py_CLEAR(r);
            }
        }
    }
    else if (kind == K_HTTP_CLIENT) {
        if ((r = PyObject_CallFunctionObjArgs(c->http_client, node, call, co, fqid,
                                              counted ? Py_True : Py_False, NULL)) == NULL)
            goto done;
        Py_CLEAR(r);
    }

    if (ret != Py_None) {
        if ((raised = get(ret, c->keys[EK_EXCEPTIONS])) == NULL)
            goto done;
        int truthy = PyObject_IsTrue(raised);
        if (truthy < 0)
            goto done;
        if (truthy) {
            if ((r = PyObject_CallFunctionObjArgs(c->exceptions, node, event_id, request_id, fqid,
                                                  counted ? Py_True : Py_False, codes, NULL)) ==
                NULL)
                goto done;
            Py_CLEAR(r);
        }
    }

    if (children == NULL && (children = node_get(node, N_CHILDREN, s_children)) == NULL)
        goto done;
    {
        PyObject *seq = PySequence_Fast(children, "extract_walk: a node's children");
        if (seq == NULL)
            goto done;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            if (push(stack, PySequence_Fast_GET_ITEM(seq, i), co, request, next_caller, agg,
                     in_http) < 0) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
    }
    rc = 0;
done:
    Py_XDECREF(call);
    Py_XDECREF(ret);
    Py_XDECREF(ms);
    Py_XDECREF(event_id);
    Py_XDECREF(key);
    Py_XDECREF(resolved);
    Py_XDECREF(co);
    Py_XDECREF(fqid);
    Py_XDECREF(sql_values);
    Py_XDECREF(agg);
    Py_XDECREF(node_id);
    Py_XDECREF(co_id);
    Py_XDECREF(request);
    Py_XDECREF(request_id);
    Py_XDECREF(children);
    Py_XDECREF(r);
    Py_XDECREF(raised);
    Py_XDECREF(is_log);
    Py_XDECREF(http_facts);
    return rc;
}

PyObject *
tt_extract_walk(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *roots, *call_node, *nodes, *codes, *in_order, *context;
    if (!PyArg_ParseTuple(args, "OOO!O!O!O!:extract_walk", &roots, &call_node, &PyList_Type,
                          &nodes, &PyDict_Type, &codes, &PyList_Type, &in_order, &PyTuple_Type,
                          &context))
        return NULL;
    if (intern_names() < 0 ||
        learn_slots(call_node, node_slot_names, N_SLOTS, node_offsets, &node_type) < 0)
        return NULL; /* (nodes of another class are read by attribute) */
    Context c;
    PyObject *has_http, *code_object_type;
    if (!PyArg_ParseTuple(context,
                          "OO!O!O!O!O!O!O!O!OOOOOOOOOOO!O!O!OO!O!O!O!O!O!OOO!OO!O!O!O!O!O!O!O!O:extract_walk context",
                          &has_http, &PyDict_Type, &c.fn_info, &PyDict_Type, &c.sql_cache,
                          &PyDict_Type, &c.items, &PyList_Type, &c.queries, &PySet_Type, &c.pairs,
                          &PySet_Type, &c.functions_seen, &PySet_Type, &c.params_seen, &PySet_Type,
                          &c.sql_seen, &c.function_values, &c.canonical_sql,
                          &c.code_object_for, &c.resolve_sql, &c.sql_key, &c.code_object,
                          &c.http_server, &c.http_client, &c.log, &c.exceptions,
                          &PyDict_Type, &c.sides, &PyList_Type, &c.class_deps,
                          &PyList_Type, &c.package_deps, &c.names, &PyList_Type,
                          &c.parameter_values, &PyList_Type, &c.classes, &PyList_Type,
                          &c.packages, &PyList_Type, &c.labels, &PyDict_Type, &c.used,
                          &PyDict_Type, &c.funcs, &c.log_labels, &c.log_levels, &PyDict_Type,
                          &c.by_location, &code_object_type, &PySet_Type, &c.class_seen,
                          &PySet_Type, &c.package_seen, &PyDict_Type, &c.locations,
                          &PyList_Type, &c.logs, &PyDict_Type, &c.messages, &PyDict_Type,
                          &c.last_params, &PyList_Type, &c.sql_normalized, &PyList_Type,
                          &c.sql_tables, &c.dynamic))
        return NULL;
    if ((c.has_http = PyObject_IsTrue(has_http)) < 0 ||
        learn_slots(code_object_type, co_slot_names, C_SLOTS, co_offsets, &co_type) < 0)
        return NULL; /* (code objects of another class are read by attribute) */
    c.learning = 64;
    init_keys(&c);
    c.known_pairs.slots = NULL;
    c.known_pairs.mask = c.known_pairs.count = 0;
    /* (the context's objects stay alive: the caller's tuple holds them) */
    PyObject *seq = PySequence_Fast(roots, "extract_walk: roots");
    if (seq == NULL) {
        clear_keys(&c);
        return NULL;
    }
    Stack stack = {NULL, 0, 0};
    for (Py_ssize_t i = PySequence_Fast_GET_SIZE(seq) - 1; i >= 0; i--) {
        if (push(&stack, PySequence_Fast_GET_ITEM(seq, i), NULL, NULL, NULL, NULL, 0) < 0) {
            Py_DECREF(seq);
            clear_stack(&stack);
            clear_keys(&c);
            return NULL;
        }
    }
    Py_DECREF(seq);
    Py_ssize_t n_calls = 0;
    while (stack.size) {
        Entry e = stack.items[--stack.size]; /* (its references now ours) */
        int failed;
        if (e.node == NULL) /* a function frame closes */
            failed = item_add_int(e.agg, 4, minus_one);
        else if (e.node == Py_None) {
            PyErr_SetString(PyExc_TypeError, "extract_walk: a node is None");
            failed = 1;
        }
        else
            failed = visit(&c, &stack, &e, nodes, codes, in_order, &n_calls) < 0;
        clear_entry(&e);
        if (failed) {
            clear_stack(&stack);
            free(c.known_pairs.slots);
            clear_keys(&c);
            return NULL;
        }
    }
    clear_stack(&stack);
    free(c.known_pairs.slots);
    clear_keys(&c);
    return PyLong_FromSsize_t(n_calls);
}

/* ------------------------------------------------------------------ stats' sums of the events
 *
 *     overhead_pairs(events, unset, other_key, sql_mark) -> raw sums, or None
 *
 * `tracetool.index.overhead._py_raw_sums(events)` in C (its twin and the reference): stats'
 * `_nested_sums` of the parsed events (dicts, `eventUpdates` applied) -- every call paired with
 * the innermost open call of its thread, each return naming it by `parent_id` or by having
 * none; per raw key, [calls that returned, the float sum of their returns'
 * `elapsed_instrumentation` in return order, the first such call]. None where the Python
 * declines (calls that do not nest plainly, a call id opened twice) and also for anything not
 * a plain list of dicts (the caller then runs its slower path, which decides); an exception
 * where the Python would raise (an unhashable id or key, a number too big for a float). The
 * key of a function call is its (defined_class, method_id, path, lineno, static), `unset` for a
 * missing field; of a SQL call whose `sql_query` is an object (sql_mark, text, database type);
 * of any other call `other_key(call)` (stats' `_other_key` of its `EventHead`).
 *
 * Why: the index summed these with stats' C scan of the raw bytes (`_collect.scanned_overhead`,
 * a second parse: ~0.33 s CPU over 200 recordings of the benchmark's seed 1); the events are
 * parsed already, so pairing them here reads a few dict fields per event. */

static PyObject *s_event, *s_thread_id, *s_parent_id, *s_elapsed_instrumentation, *s_return,
    *s_empty;

static int
intern_pair_names(void)
{
    if (s_empty != NULL)
        return 0;
    if (intern_names() < 0 || (s_event = PyUnicode_InternFromString("event")) == NULL ||
        (s_thread_id = PyUnicode_InternFromString("thread_id")) == NULL ||
        (s_parent_id = PyUnicode_InternFromString("parent_id")) == NULL ||
        (s_elapsed_instrumentation = PyUnicode_InternFromString("elapsed_instrumentation")) ==
            NULL ||
        (s_return = PyUnicode_InternFromString("return")) == NULL)
        return -1;
    if ((s_empty = PyUnicode_FromString("")) == NULL) /* last: the "done" mark */
        return -1;
    return 0;
}

/* `a != b` as Python's operator says it (no identity shortcut but for types whose `==` is
 * reflexive: nan != nan); 1, 0 or -1 */
static int
unequal(PyObject *a, PyObject *b)
{
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b))
        return PyObject_RichCompareBool(a, b, Py_NE);
    if (a == b && (PyUnicode_CheckExact(a) || a == Py_None))
        return 0;
    PyObject *r = PyObject_RichCompare(a, b, Py_NE);
    if (r == NULL)
        return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

/* `value == name` (Python's `==`) of a value against an ASCII str name; 1, 0 or -1 */
static int
equals_name(PyObject *value, PyObject *name)
{
    if (value == name)
        return 1;
    if (PyUnicode_CheckExact(value)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(value);
        return n == PyUnicode_GET_LENGTH(name) && PyUnicode_KIND(value) == PyUnicode_1BYTE_KIND &&
               memcmp(PyUnicode_DATA(value), PyUnicode_DATA(name), (size_t)n) == 0;
    }
    return PyObject_RichCompareBool(value, name, Py_EQ);
}

/* `str(value or "")` (new ref) */
static PyObject *
str_or_empty(PyObject *value)
{
    int truthy = PyObject_IsTrue(value);
    if (truthy < 0)
        return NULL;
    if (!truthy)
        return Py_NewRef(s_empty);
    return PyObject_Str(value);
}

/* The fields of an event the pairing reads, by the decoder's own key objects once met (as
 * `Context.keys`: a dict lookup then matches by identity), else the interned names */
enum { PK_EVENT, PK_ID, PK_THREAD, PK_PARENT, PK_SECONDS, PK_SQL, PK_SERVER, PK_CLIENT,
       PK_CLASS, PK_METHOD, PK_PATH, PK_LINENO, PK_STATIC, N_PAIR_KEYS };

static void
learn_pair_keys(PyObject **keys, PyObject *const *names, PyObject *event)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(event, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))
            continue;
        for (int i = 0; i < N_PAIR_KEYS; i++) {
            if (keys[i] == key)
                break;
            if (keys[i] == names[i] && equals_name(key, names[i]) == 1) {
                Py_SETREF(keys[i], Py_NewRef(key));
                break;
            }
        }
    }
}

/* The raw key of a call that returned (new ref), as `_py_raw_sums` makes it */
static PyObject *
pair_key(PyObject *const *keys, PyObject *call, PyObject *unset, PyObject *other_key,
         PyObject *sql_mark)
{
    PyObject *query = PyDict_GetItemWithError(call, keys[PK_SQL]);
    if (query != NULL) {
        if (Py_IS_TYPE(query, &PyDict_Type)) {
            PyObject *text = get(query, s_sql);
            PyObject *database = text == NULL ? NULL : get(query, s_database_type);
            PyObject *t = database == NULL ? NULL : str_or_empty(text);
            PyObject *d = t == NULL ? NULL : str_or_empty(database);
            PyObject *key = d == NULL ? NULL : PyTuple_Pack(3, sql_mark, t, d);
            Py_XDECREF(text);
            Py_XDECREF(database);
            Py_XDECREF(t);
            Py_XDECREF(d);
            return key;
        }
        return PyObject_CallOneArg(other_key, call);
    }
    if (PyErr_Occurred())
        return NULL;
    int found = PyDict_Contains(call, keys[PK_SERVER]);
    if (found == 0)
        found = PyDict_Contains(call, keys[PK_CLIENT]);
    if (found != 0)
        return found < 0 ? NULL : PyObject_CallOneArg(other_key, call);
    PyObject *key = PyTuple_New(5);
    if (key == NULL)
        return NULL;
    for (int i = 0; i < 5; i++) {
        PyObject *value = PyDict_GetItemWithError(call, keys[PK_CLASS + i]);
        if (value == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(key);
                return NULL;
            }
            value = i == 1 ? Py_None : unset; /* (`get(field, UNSET)`; method_id's None) */
        }
        PyTuple_SET_ITEM(key, i, Py_NewRef(value));
    }
    if (PyTuple_GET_ITEM(key, 1) == Py_None) { /* no method_id: named as stats names it */
        Py_DECREF(key);
        return PyObject_CallOneArg(other_key, call);
    }
    return key;
}

/* `entry[1] += seconds` of a return's `elapsed_instrumentation`, when truthy and an int or a
 * float (bool is neither) */
static int
add_seconds(PyObject *entry, PyObject *seconds)
{
    if (seconds == NULL)
        return 0;
    int number = Py_IS_TYPE(seconds, &PyFloat_Type) || Py_IS_TYPE(seconds, &PyLong_Type);
    if (!number)
        return 0;
    int truthy = PyObject_IsTrue(seconds);
    if (truthy <= 0)
        return truthy;
    PyObject *sum = PyList_GET_ITEM(entry, 1);
    PyObject *total;
    if (PyFloat_CheckExact(sum) && PyFloat_CheckExact(seconds))
        total = PyFloat_FromDouble(PyFloat_AS_DOUBLE(sum) + PyFloat_AS_DOUBLE(seconds));
    else
        total = PyNumber_Add(sum, seconds); /* (float + int: the int made a double, or raises) */
    if (total == NULL)
        return -1;
    PyList_SetItem(entry, 1, total);
    return 0;
}

PyObject *
tt_overhead_pairs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *events, *unset, *other_key, *sql_mark;
    if (!PyArg_ParseTuple(args, "OOOO:overhead_pairs", &events, &unset, &other_key, &sql_mark))
        return NULL;
    if (!PyList_CheckExact(events))
        Py_RETURN_NONE;
    if (intern_pair_names() < 0)
        return NULL;
    PyObject *names[N_PAIR_KEYS] = {s_event, s_id, s_thread_id, s_parent_id,
                                    s_elapsed_instrumentation, s_sql_query,
                                    s_http_server_request, s_http_client_request,
                                    s_defined_class, s_method_id, s_path, s_lineno, s_static};
    PyObject *keys[N_PAIR_KEYS];
    for (int k = 0; k < N_PAIR_KEYS; k++)
        keys[k] = Py_NewRef(names[k]);
    int learning = 64; /* (events whose keys are learned) */
    PyObject *sums = PyDict_New(), *stacks = PyDict_New(), *ids = PySet_New(NULL);
    PyObject *result = NULL;
    PyObject *thread = NULL; /* the thread of `stack`: NULL before the first event */
    PyObject *stack = NULL;  /* borrowed: stacks[thread] */
    Py_ssize_t opened = 0;
    if (sums == NULL || stacks == NULL || ids == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (!PyDict_CheckExact(event)) {
            result = Py_NewRef(Py_None); /* (the Python reads it by `.get`, or fails) */
            goto done;
        }
        if (learning > 0) {
            learning--;
            learn_pair_keys(keys, names, event);
        }
        PyObject *kind = PyDict_GetItemWithError(event, keys[PK_EVENT]);
        if (kind == NULL) {
            if (PyErr_Occurred())
                goto done;
            continue; /* (None is neither "call" nor "return") */
        }
        int is_call = equals_name(kind, s_call), is_return = 0;
        if (is_call < 0 || (!is_call && (is_return = equals_name(kind, s_return)) < 0))
            goto done;
        if (!is_call && !is_return)
            continue;
        if (is_call) {
            PyObject *id = PyDict_GetItemWithError(event, keys[PK_ID]);
            if (id == NULL && PyErr_Occurred())
                goto done;
            if (PySet_Add(ids, id == NULL ? Py_None : id) < 0)
                goto done;
            opened++;
        }
        PyObject *tid = PyDict_GetItemWithError(event, keys[PK_THREAD]);
        if (tid == NULL) {
            if (PyErr_Occurred())
                goto done;
            tid = Py_None;
        }
        int changed = thread == NULL ? 1 : unequal(tid, thread);
        if (changed < 0)
            goto done;
        if (changed) {
            PyObject *fresh = PyList_New(0);
            if (fresh == NULL)
                goto done;
            stack = PyDict_SetDefault(stacks, tid, fresh);
            Py_DECREF(fresh);
            if (stack == NULL)
                goto done;
            Py_XSETREF(thread, Py_NewRef(tid));
        }
        if (is_call) {
            if (PyList_Append(stack, event) < 0)
                goto done;
            continue;
        }
        PyObject *parent = PyDict_GetItemWithError(event, keys[PK_PARENT]);
        if (parent == NULL && PyErr_Occurred())
            goto done;
        if (parent == Py_None)
            parent = NULL;
        Py_ssize_t depth = PyList_GET_SIZE(stack);
        if (depth == 0) {
            if (parent == NULL)
                continue; /* closes nothing */
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyObject *call = PyList_GET_ITEM(stack, depth - 1); /* (`stack.pop()`) */
        Py_SET_SIZE(stack, depth - 1);
        Py_DECREF(call); /* (alive: in `events`) */
        if (!PyDict_CheckExact(call)) { /* (never: calls are dicts checked above) */
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (parent != NULL) {
            PyObject *call_id = PyDict_GetItemWithError(call, keys[PK_ID]);
            if (call_id == NULL && PyErr_Occurred())
                goto done;
            int differs = unequal(parent, call_id == NULL ? Py_None : call_id);
            if (differs < 0)
                goto done;
            if (differs) {
                result = Py_NewRef(Py_None);
                goto done;
            }
        }
        PyObject *key = pair_key(keys, call, unset, other_key, sql_mark);
        if (key == NULL)
            goto done;
        PyObject *entry = PyDict_GetItemWithError(sums, key);
        if (entry == NULL) {
            if (PyErr_Occurred() ||
                (entry = Py_BuildValue("[nfO]", (Py_ssize_t)0, 0.0, call)) == NULL) {
                Py_DECREF(key);
                goto done;
            }
            int failed = PyDict_SetItem(sums, key, entry);
            Py_DECREF(entry); /* (the dict holds it) */
            if (failed) {
                Py_DECREF(key);
                goto done;
            }
        }
        Py_DECREF(key);
        if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError, "overhead_pairs: a sums entry is not [n, s, call]");
            goto done;
        }
        PyObject *count = PyNumber_Add(PyList_GET_ITEM(entry, 0), one);
        if (count == NULL)
            goto done;
        PyList_SetItem(entry, 0, count);
        PyObject *seconds = PyDict_GetItemWithError(event, keys[PK_SECONDS]);
        if ((seconds == NULL && PyErr_Occurred()) || add_seconds(entry, seconds) < 0)
            goto done;
    }
    /* a call id used twice (`len(set(ids)) != len(ids)`) */
    result = PySet_GET_SIZE(ids) != opened ? Py_NewRef(Py_None) : Py_NewRef(sums);
done:
    Py_XDECREF(sums);
    Py_XDECREF(stacks);
    Py_XDECREF(ids);
    Py_XDECREF(thread);
    for (int k = 0; k < N_PAIR_KEYS; k++)
        Py_DECREF(keys[k]);
    return result;
}

/* Whether a code object's `location` is `ClassMap._function_for`'s location of a call (`path`
 * not None): `f"{path}:{lineno}"`, or `str(path)` when `lineno` is None; 1, 0 or -1. A str path
 * and an int line are compared in place, anything else formatted as Python formats it. */
static int
located(PyObject *location, PyObject *path, PyObject *lineno)
{
    if (location == Py_None)
        return 0;
    if (PyUnicode_CheckExact(location) && PyUnicode_CheckExact(path) &&
        PyLong_CheckExact(lineno)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(path), total = PyUnicode_GET_LENGTH(location);
        if (total <= n + 1 || PyUnicode_READ_CHAR(location, n) != ':' ||
            PyUnicode_Tailmatch(location, path, 0, n, -1) != 1)
            return 0;
        int overflow = 0;
        long long line = PyLong_AsLongLongAndOverflow(lineno, &overflow);
        if (!overflow && !(line == -1 && PyErr_Occurred())) {
            char digits[32];
            int length = snprintf(digits, sizeof digits, "%lld", line);
            if (total - n - 1 != length)
                return 0;
            for (int i = 0; i < length; i++)
                if (PyUnicode_READ_CHAR(location, n + 1 + i) != (Py_UCS4)(unsigned char)digits[i])
                    return 0;
            return 1;
        }
        PyErr_Clear();
    }
    PyObject *at = lineno != Py_None ? PyUnicode_FromFormat("%S:%S", path, lineno)
                                     : PyObject_Str(path);
    if (at == NULL)
        return -1;
    int same = PyObject_RichCompareBool(location, at, Py_EQ);
    Py_DECREF(at);
    return same;
}

/*     overhead_names(raw_sums, fn_info, static, unset) -> None
 *
 * `tracetool.index.overhead.extract_named`'s naming of function calls by the extract, in C:
 * each entry of `overhead_pairs`' sums keyed by a function call whose five fields are all
 * present (the key is then `Extractor.fn_info`'s key of the call) and resolved by the extract
 * to a classMap function (`static`: the set of their ids) at the call's location (`f"{path}:
 * {lineno}"`, or the path without a line) with its name (`str(method_id)`) gets that
 * function's fqid appended (a fourth item, which `named_sums` takes as the name). The others
 * are left to `_ResolvedNames` (the same test in Python) and stats' own naming. */
PyObject *
tt_overhead_names(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *raw_sums, *fn_info, *statics, *unset;
    if (!PyArg_ParseTuple(args, "O!O!O!O:overhead_names", &PyDict_Type, &raw_sums, &PyDict_Type,
                          &fn_info, &PySet_Type, &statics, &unset))
        return NULL;
    if (intern_names() < 0)
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *key, *entry;
    while (PyDict_Next(raw_sums, &pos, &key, &entry)) {
        if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 5 || !PyList_CheckExact(entry) ||
            PyList_GET_SIZE(entry) != 3)
            continue;
        int complete = 1;
        for (int i = 0; i < 5; i++)
            complete &= PyTuple_GET_ITEM(key, i) != unset;
        if (!complete)
            continue;
        PyObject *found = PyDict_GetItemWithError(fn_info, key);
        if (found == NULL) {
            if (PyErr_Occurred())
                return NULL;
            continue;
        }
        if (!PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) < 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(found, 1)))
            continue;
        PyObject *co = PyTuple_GET_ITEM(found, 0);
        PyObject *co_id = ID(co);
        int known = co_id == NULL ? -1 : PySet_Contains(statics, co_id);
        Py_XDECREF(co_id);
        if (known <= 0) {
            if (known < 0)
                return NULL;
            continue;
        }
        PyObject *path = PyTuple_GET_ITEM(key, 2), *lineno = PyTuple_GET_ITEM(key, 3);
        if (path == Py_None)
            continue;
        PyObject *location = attr(co, s_location);
        if (location == NULL)
            return NULL;
        int same = located(location, path, lineno);
        Py_DECREF(location);
        if (same > 0) {
            PyObject *method = PyTuple_GET_ITEM(key, 1);
            PyObject *name = attr(co, s_name);
            if (name != NULL && PyUnicode_CheckExact(method) && PyUnicode_CheckExact(name))
                same = PyUnicode_Compare(name, method) == 0; /* (`str(method)` is itself) */
            else {
                method = name == NULL ? NULL : PyObject_Str(method);
                same = method == NULL ? -1 : PyObject_RichCompareBool(name, method, Py_EQ);
                Py_XDECREF(method);
            }
            Py_XDECREF(name);
        }
        if (same < 0)
            return NULL;
        if (same && PyList_Append(entry, PyTuple_GET_ITEM(found, 1)) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}
