/* tracetool/_speedups_diagram.c: the sequence diagram's Python loops in C.
 *
 * A second source file of the optional `tracetool._speedups` extension (setup.py); its entry
 * points are in `_speedups.c`'s method table, and each has a pure-Python twin that stays the
 * reference (tests/diagram/test_speedups_diagram.py runs both on every recording it has, odd,
 * random and mutated ones included, and compares the diagrams byte for byte):
 *
 *   call_tree        `CallTreeBuilder.add` (tracetool.filters.apply.call_tree)
 *   preorder_calls   `preorder(roots)` and each node's call (apply.bind_nodes)
 *   tree_facts       `tracetool.query.tree._facts`: each node's row facts and signature
 *                    (tested against it in tests/query/test_tree_facts.py)
 *   bind_heads       the loop of `apply._bind_heads` (each call's code object, by the function
 *                    cache; the rest by its Python resolver)
 *   diagram_actions  the walk of `tracetool.diagram.builder.actions_of`
 *   subtree_digests  the loop of `builder._subtree_digests`
 *   fold_loops       `tracetool.diagram.loops.fold` (which subtree_digests calls per action)
 *   diagram_digests  `builder._root_digests`: the two above for the index's digest, making
 *                    no action (each call's digest, then its subtree digest)
 *   uml_lines        the memoized-text case of `tracetool.diagram.plantuml._batch_lines`
 *   sql_premask      `digests._premask`'s regex substitution, for ASCII texts
 *   sql_keywords_upper  `digests._canonical`'s keyword upper-casing, for ASCII texts
 *
 * Nothing here parses bytes or owns memory but a walk's stack: every value stays the Python
 * object the Python code would make or read, CallNode and Action objects are allocated with
 * their class's `tp_alloc` and their slots read and filled through the offsets of the class's
 * member descriptors (checked once per class: any other class is declined, NotImplemented, or
 * read by attribute), and whatever is not the common case calls the same Python helper the
 * Python loop calls (SQL digests, HTTP calls, cache misses, labels, loop folding...).
 *
 * Where the time went (60 MB benchmark recording, 118,000 calls, 101,000 actions; CPU seconds):
 * call tree 0.105 -> 0.047, pre-order 0.03 -> 0.012, actions 0.45 -> 0.22-0.26 (now mostly
 * memory: the first touch of each node, event and list; HTTP calls stay Python, ~0.04),
 * subtree digests 0.08 -> 0.05, PlantUML lines 0.27 -> 0.17-0.2. What stays: orjson's
 * decode and encode, the byte pre-check, the kernel's page faults and writes.
 *
 * The index's digest (200 seed1 recordings, 124,000 calls; `BoundDigests` alone, ~0.3 s): the
 * SQL calls' queries swapped in the walk (`unname_sql`) instead of `without_sql_names`' pass
 * over every call (~0.04 s, mostly the first touch of every call event, which the walk then
 * pays for the SQL calls only), and the callees of actors without names made here (~160
 * Python `callee_of` calls per recording, ~0.04 s). What stays: the first touch of each node
 * and event, the per-recording code-object work (live code objects, lifelines: ~0.03 s),
 * HTTP calls (`_rpc`, ~0.03 s) and the sha256 of each distinct subtree (~0.025 s).
 * Then (callgrind, the digest of the 241 recordings of /tmp/s200 each freshly bound: 2.46 G
 * instructions): subtree digests and HTTP requests' results kept from one recording to the
 * next (bounded, `builder._SHARED`, `builder._RPCS`) and a remembered request's digest made
 * here (`rpc_action`), 1.92 G; the walk making no action (`diagram_digests`: the actions'
 * allocation and freeing were ~0.5 G), 1.81 G. What stays: the first digest of each distinct
 * SQL text (`digests.sql_digest`: its canonical form, ~1/3), the per-recording callees.
 * Then (callgrind, `sequence-diagram -f json` of the 60 MB recording, whole command: 4.81 G ->
 * 4.34 G instructions; plantuml 5.09 G -> 4.68 G): `loops.fold` here (subtree digests with
 * folding 0.41 G -> 0.26 G), `_bind_heads`' loop here (~0.44 G of Python -> 0.31 G, half of it
 * the Python resolver of HTTP calls and the function cache's tuple keys of fresh strings), and
 * struct fields read at their offsets (`attr_of`: call tree 0.42 G -> 0.30 G, walk -0.07 G).
 *
 * Then (callgrind, the 60 MB recording, whole command: json 4.34 G -> 4.03 G, plantuml 4.68 G
 * -> 4.36 G): the function cache's memo in `bind_heads` (keys compared by their strings' bytes,
 * hashed a word at a time: the dict's siphash of three fresh strings per call was ~1,500
 * instructions), HTTP requests' cache keys made there too, the SQL digests' two regex
 * substitutions of ASCII texts here (`sql_premask`, `sql_keywords_upper`: the regex engine and
 * its Python callbacks were ~2/3 of the diagram's SQL digests), and the subtree digests'
 * sha256 fed their joined bytes from here.
 *
 *     diagram_actions(call_roots, cos, kept, order, digests_only, context) -> root actions
 *
 * where context is (callees, callee_of, actors, special, plain, template_of, return_key,
 * digests, function_digest, merge_labels, get, mode, Action, left_out, sql, sql_digest,
 * CallNode, in_order, unname_sql, unnamed, anonymous) — `actions_of`'s caches and helpers (`ActionFactory`), `get` the event
 * field reader (`field_getter`) and `mode` 0 when it is `dict.get`, 1 when it is `getattr`, 2
 * for another callable; in_order is None or (pre-order nodes, their code objects); unname_sql
 * None or what a SQL call's code object becomes (`unname_sql(co)`, remembered in the dict
 * `unnamed` by id(co): the index's digest, without a copy of the bound's maps); anonymous
 * None or the actor `Actors(named=False)` gives every call with a lifeline (`ANONYMOUS`):
 * then, when `actors` is such, callees are made here as `ActionFactory.callee` makes them
 * (`Actors.actor_for` walking up the code objects, in C). Returns
 * NotImplemented when `Action` is not a class whose `__slots__` this file knows how to fill
 * (the caller then runs the Python loop).
 *
 * Per call it does in C what the Python loop does inline: the pre-order walk (an explicit stack,
 * any depth), the code object and callee lookups, a plain function call's action (template
 * key, labels, elapsed, event ids, or a bare action when only digests are wanted) and a SQL
 * call's; HTTP calls (`ActionFactory.special_call`), cache misses, `_return_key` of return
 * values with properties and event labels go to the Python helpers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ Action's slots */

enum {
    S_CALLEE,
    S_CALLER,
    S_CHILDREN,
    S_COUNT,
    S_DIFF_MODE,
    S_DIGEST,
    S_ELAPSED,
    S_EVENT_IDS,
    S_FORMER_NAME,
    S_FORMER_RESULT,
    S_LABELS,
    S_NAME,
    S_NODE_TYPE,
    S_PARENT,
    S_QUERY,
    S_RETURN_VALUE,
    S_ROUTE,
    S_STABLE_PROPERTIES,
    S_STATIC,
    S_STATUS,
    S_SUBTREE_DIGEST,
    N_SLOTS
};

static const char *const slot_names[N_SLOTS] = {
    "callee",      "caller",       "children",    "count",  "diff_mode",         "digest",
    "elapsed",     "event_ids",    "former_name", "former_result", "labels",    "name",
    "node_type",   "parent",       "query",       "return_value",  "route",     "stable_properties",
    "static",      "status",       "subtree_digest"};

static PyTypeObject *action_type = NULL; /* a strong reference, the class the offsets are of */
static Py_ssize_t offsets[N_SLOTS];

/* The offsets of `names`, object slots of `type` (a class whose instances this file fills in
 * place), into `out`, and a new reference to the class in `*cached`: 0 when they are known (or
 * `type` is `*cached` already), 1 when `type` is not a class with such slots (declined, nothing
 * changed), -1 on an error. (Also _speedups_extract.c's, for CallNode.) */
int
learn_slots(PyObject *type, const char *const *names, int n, Py_ssize_t *out,
            PyTypeObject **cached)
{
    if ((PyTypeObject *)type == *cached)
        return 0;
    if (!PyType_Check(type))
        return 1;
    PyTypeObject *t = (PyTypeObject *)type;
    Py_ssize_t found[32];
    if (n > 32)
        return 1;
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString(type, names[i]);
        if (d == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            return 1;
        }
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyDescrObject *)d)->d_type == t &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)d)->d_member->flags & READONLY);
        if (ok) {
            found[i] = ((PyMemberDescrObject *)d)->d_member->offset;
            ok = found[i] >= (Py_ssize_t)sizeof(PyObject) &&
                 found[i] + (Py_ssize_t)sizeof(PyObject *) <= t->tp_basicsize;
        }
        Py_DECREF(d);
        if (!ok)
            return 1;
    }
    if (t->tp_alloc == NULL || t->tp_itemsize != 0)
        return 1;
    memcpy(out, found, sizeof(Py_ssize_t) * (size_t)n);
    Py_INCREF(type);
    Py_XSETREF(*cached, t);
    return 0;
}

/* `Action`'s slot offsets (`learn_slots`) */
static int
learn_action_type(PyObject *type)
{
    return learn_slots(type, slot_names, N_SLOTS, offsets, &action_type);
}

#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + offsets[i]))

/* Sets a slot of a new action (its old value, if any, released); steals nothing. */
static inline void
set_slot(PyObject *obj, int i, PyObject *value)
{
    PyObject *old = SLOT(obj, i);
    Py_INCREF(value);
    SLOT(obj, i) = value;
    Py_XDECREF(old);
}

/* `action.<slot>` (a new reference): read in place from an action of the known class, else
 * by attribute (a reading of an unset slot raises AttributeError either way). */
static PyObject *
action_slot(PyObject *action, int i, PyObject *name)
{
    if (Py_TYPE(action) == action_type) {
        PyObject *value = SLOT(action, i);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(action, name);
}

/* CallNode's slots (`tracetool.trace.tree`), learned as Action's are */
enum { N_OPEN, N_CALL, N_CHILDREN, N_PARENT, N_RET, N_NODE_SLOTS };
static const char *const node_slot_names[N_NODE_SLOTS] = {"_open", "call", "children",
                                                            "parent", "ret"};
static PyTypeObject *node_type = NULL;
static Py_ssize_t node_offsets[N_NODE_SLOTS];
static PyObject *node_get(PyObject *node, int i, PyObject *name);
static int learn_node_type(PyObject *type);
static int intern_tree_names(void);

/* ------------------------------------------------------------------ names and constants */

static PyObject *s_call, *s_ret, *s_children, *s_return_value, *s_exceptions, *s_properties,
    *s_class, *s_labels, *s_elapsed, *s_id, *s_callee, *s_append, *s_type, *s_co_parent,
    *s_co_name, *s_co_static, *s_named, *s_included, *s_modules, *s_nearest, *s_query,
    *s_route, *s_external_route;
static PyObject *empty_str, *function_type, *zero;
static PyObject *s_sql_query, *s_normalized_sql, *s_sql, *s_database_type;

static int
intern_names(void)
{
    if (s_call != NULL)
        return 0;
#define INTERN(var, text)                                   \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return -1;
    INTERN(s_ret, "ret")
    INTERN(s_children, "children")
    INTERN(s_return_value, "return_value")
    INTERN(s_exceptions, "exceptions")
    INTERN(s_properties, "properties")
    INTERN(s_class, "class")
    INTERN(s_labels, "labels")
    INTERN(s_elapsed, "elapsed")
    INTERN(s_id, "id")
    INTERN(s_type, "type")
    INTERN(s_co_parent, "parent")
    INTERN(s_co_name, "name")
    INTERN(s_co_static, "static")
    INTERN(s_named, "named")
    INTERN(s_included, "included")
    INTERN(s_modules, "modules")
    INTERN(s_nearest, "nearest")
    INTERN(s_query, "query")
    INTERN(s_route, "route")
    INTERN(s_external_route, "external-route")
    INTERN(s_callee, "callee")
    INTERN(s_append, "append")
    INTERN(s_sql_query, "sql_query")
    INTERN(s_normalized_sql, "normalized_sql")
    INTERN(s_sql, "sql")
    INTERN(s_database_type, "database_type")
#undef INTERN
    if ((empty_str = PyUnicode_FromStringAndSize("", 0)) == NULL)
        return -1;
    if ((function_type = PyLong_FromLong(3)) == NULL) /* model.FUNCTION */
        return -1;
    if ((zero = PyLong_FromLong(0)) == NULL)
        return -1;
    if ((s_call = PyUnicode_InternFromString("call")) == NULL) /* last: the "done" mark */
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ the walk */

typedef struct {
    PyObject *get;
    int mode; /* 0 dict.get, 1 getattr, 2 another callable */
} Getter;

/* `getattr(obj, key)` (a new reference) for `key` an interned name: an object slot (a member
 * descriptor of the class, read by `object.__getattribute__`) read at its offset, learned
 * once per (class, name) and relearned when the class changes (its version tag); anything
 * else, or a slot left empty, read by attribute. The event structs' fields are such slots: a
 * call tree or a diagram reads ~6 of them per event. */
typedef struct {
    PyTypeObject *type; /* (a strong reference) */
    PyObject *key;      /* (interned: compared by identity) */
    unsigned int version;
    Py_ssize_t offset; /* -1: read by attribute (or `value`) */
    PyObject *value;   /* a class attribute every instance reads (a strong reference), or NULL */
} FieldSlot;

static FieldSlot field_slots[256];

static PyObject *
attr_of(PyObject *obj, PyObject *key)
{
    PyTypeObject *t = Py_TYPE(obj);
    /* two places a (class, name) may be kept at, so two classes whose names meet at one
     * (a call's and a return's tag) do not evict each other again and again */
    uint64_t h = ((uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15u) ^
                 ((uint64_t)(uintptr_t)key * 0xC2B2AE3D27D4EB4Fu);
    FieldSlot *s = &field_slots[(h >> 56) & 0xfe];
    if (s->type != t || s->key != key) {
        if (s[1].type == t && s[1].key == key)
            s = s + 1;
        else if (s->type != NULL && s[1].type == NULL)
            s = s + 1; /* (learned into a free place; else into the first) */
    }
    if (s->type != t || s->key != key || s->version != t->tp_version_tag || s->version == 0) {
        Py_ssize_t offset = -1;
        PyObject *shared = NULL;
        if (t->tp_getattro == PyObject_GenericGetAttr) {
            PyObject *descr = _PyType_Lookup(t, key); /* (borrowed; gives t a version tag) */
            if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
                PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
                if ((def->type == T_OBJECT_EX || def->type == T_OBJECT) &&
                    !(def->flags & READ_RESTRICTED) &&
                    def->offset >= (Py_ssize_t)sizeof(PyObject) &&
                    def->offset + (Py_ssize_t)sizeof(PyObject *) <= t->tp_basicsize)
                    offset = def->offset;
            }
            /* a class attribute (a str, int or None: never a descriptor) of instances
             * without a __dict__: what `object.__getattribute__` returns (a struct's tag) */
            else if (descr != NULL &&
                     (PyUnicode_CheckExact(descr) || PyLong_CheckExact(descr) ||
                      descr == Py_None) &&
                     t->tp_dictoffset == 0 && !(t->tp_flags & Py_TPFLAGS_MANAGED_DICT))
                shared = descr;
        }
        if (!(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || t->tp_version_tag == 0)
            return PyObject_GetAttr(obj, key); /* (no tag to tell a change by: not kept) */
        Py_INCREF(t);
        Py_XSETREF(s->type, t);
        Py_XINCREF(shared);
        Py_XSETREF(s->value, shared);
        s->key = key;
        s->version = t->tp_version_tag;
        s->offset = offset;
    }
    if (s->offset >= 0) {
        PyObject *value = *(PyObject **)((char *)obj + s->offset);
        if (value != NULL)
            return Py_NewRef(value);
    }
    else if (s->value != NULL)
        return Py_NewRef(s->value);
    return PyObject_GetAttr(obj, key);
}

/* `get(event, key)`, a new reference. */
static PyObject *
get_field(const Getter *g, PyObject *event, PyObject *key)
{
    if (g->mode == 0 && PyDict_Check(event)) {
        PyObject *value = PyDict_GetItemWithError(event, key);
        if (value != NULL)
            return Py_NewRef(value);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (g->mode == 1)
        return attr_of(event, key);
    return PyObject_CallFunctionObjArgs(g->get, event, key, NULL);
}

/* bool(get(event, key)): 1, 0, or -1 on an error. */
static int
field_true(const Getter *g, PyObject *event, PyObject *key)
{
    PyObject *value = get_field(g, event, key);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

typedef struct {
    PyObject *node;
    PyObject *parent; /* NULL for None */
} Item;

typedef struct {
    Item *items;
    Py_ssize_t size, capacity;
} Stack;

static int
push(Stack *stack, PyObject *node, PyObject *parent)
{
    if (stack->size == stack->capacity) {
        Py_ssize_t capacity = stack->capacity ? stack->capacity * 2 : 256;
        Item *items = realloc(stack->items, (size_t)capacity * sizeof(Item));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        stack->items = items;
        stack->capacity = capacity;
    }
    Py_INCREF(node);
    Py_XINCREF(parent);
    stack->items[stack->size].node = node;
    stack->items[stack->size].parent = parent;
    stack->size++;
    return 0;
}

/* Push a node's children (a sequence) in reverse, each with `parent`: they pop in order. */
static int
push_all(Stack *stack, PyObject *children, PyObject *parent)
{
    PyObject *seq = PySequence_Fast(children, "children must be a sequence");
    if (seq == NULL)
        return -1;
    PyObject **kids = PySequence_Fast_ITEMS(seq);
    int rc = 0;
    for (Py_ssize_t i = PySequence_Fast_GET_SIZE(seq); i-- > 0 && rc == 0;)
        rc = push(stack, kids[i], parent);
    Py_DECREF(seq);
    return rc;
}

static void
clear_stack(Stack *stack)
{
    for (Py_ssize_t i = 0; i < stack->size; i++) {
        Py_DECREF(stack->items[i].node);
        Py_XDECREF(stack->items[i].parent);
    }
    free(stack->items);
    stack->items = NULL;
    stack->size = stack->capacity = 0;
}

static int
append_to(PyObject *list, PyObject *item)
{
    if (PyList_CheckExact(list))
        return PyList_Append(list, item);
    PyObject *r = PyObject_CallMethodOneArg(list, s_append, item);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* A new action of `action_type` with every slot None but those given (Action.function). */
static PyObject *
new_function(PyObject *digest, PyObject *caller, PyObject *callee, PyObject *name,
             PyObject *is_static, PyObject *props, PyObject *returns, PyObject *labels,
             PyObject *elapsed, PyObject *event_ids)
{
    PyObject *children = PyList_New(0);
    if (children == NULL)
        return NULL;
    PyObject *a = action_type->tp_alloc(action_type, 0);
    if (a == NULL) {
        Py_DECREF(children);
        return NULL;
    }
    for (int i = 0; i < N_SLOTS; i++)
        set_slot(a, i, Py_None);
    set_slot(a, S_NODE_TYPE, function_type);
    set_slot(a, S_DIGEST, digest);
    set_slot(a, S_SUBTREE_DIGEST, empty_str);
    set_slot(a, S_CALLER, caller);
    set_slot(a, S_CALLEE, callee);
    set_slot(a, S_NAME, name);
    set_slot(a, S_STATIC, is_static);
    set_slot(a, S_STABLE_PROPERTIES, props);
    set_slot(a, S_RETURN_VALUE, returns);
    set_slot(a, S_CHILDREN, children);
    set_slot(a, S_ELAPSED, elapsed);
    set_slot(a, S_EVENT_IDS, event_ids);
    set_slot(a, S_LABELS, labels);
    set_slot(a, S_COUNT, zero);
    Py_DECREF(children);
    return a;
}

/* Action.bare(digest) */
static PyObject *
new_bare(PyObject *digest)
{
    PyObject *children = PyList_New(0);
    if (children == NULL)
        return NULL;
    PyObject *a = action_type->tp_alloc(action_type, 0);
    if (a == NULL) {
        Py_DECREF(children);
        return NULL;
    }
    set_slot(a, S_DIGEST, digest);
    set_slot(a, S_SUBTREE_DIGEST, empty_str);
    set_slot(a, S_CHILDREN, children);
    set_slot(a, S_CALLEE, Py_None);
    Py_DECREF(children);
    return a;
}

typedef struct {
    PyObject *callees, *callee_of, *actors, *special, *plain, *template_of, *return_key,
        *digests, *function_digest, *merge_labels, *left_out, *sql_digests, *sql_digest;
    PyObject *in_nodes, *in_cos; /* the pre-order nodes and their code objects, or NULL */
    Py_ssize_t visited;          /* nodes walked so far (their pre-order number) */
    Getter get;
    PyObject *digests_only; /* Py_True or Py_False */
    /* `unname_sql` (None, or what a SQL call's code object becomes: `unname(co)`) and its
     * answers by id(co) */
    PyObject *unname, *unnamed;
    /* `Actors(named=False)`'s maps and the actor it gives every call with a lifeline, when
     * the walk makes callees itself (`anonymous_callee`); NULL otherwise */
    PyObject *anonymous, *included, *modules, *nearest;
    /* `ActionFactory._rpc`'s cache and what its keys are made of (`rpc_action`): NULL when
     * not given */
    PyObject *rpcs, *server_rpc, *client_rpc, *client_routes, *no_object;
    /* 1: a bare action made in C is its digest alone, a str (`diagram_digests`) */
    int want_digest;
} Context;

/* Action.bare(digest), or the digest itself when the walk wants digests only (new ref). */
static PyObject *new_bare(PyObject *digest);
static inline PyObject *
bare_or_digest(const Context *c, PyObject *digest)
{
    return c->want_digest ? Py_NewRef(digest) : new_bare(digest);
}

/* `co.id` (new ref): the `_id` it remembers when it has one (`CodeObject.id`, a property,
 * computes it once and keeps it there), without the property's Python call. */
static PyObject *s__id;

static PyObject *
code_object_id(PyObject *co)
{
    if (s__id == NULL && (s__id = PyUnicode_InternFromString("_id")) == NULL)
        return NULL;
    PyObject *known = PyObject_GetAttr(co, s__id);
    if (known != NULL && PyUnicode_CheckExact(known))
        return known;
    if (known == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return NULL;
        PyErr_Clear();
    }
    Py_XDECREF(known);
    return PyObject_GetAttr(co, s_id);
}

/* `_return_key(ret)` (new ref) of a return whose `return_value` is the exact dict `value` with
 * "properties", made here when those are null, not a list, or an exact list of exact dicts and
 * non-dicts (skipped, as the Python helper skips them); NULL with `*handled` 0 (no error) for
 * the others, left to the Python helper, and NULL with `*handled` 1 on an error. */
static PyObject *
return_key_here(const Context *c, PyObject *ret, PyObject *value, int *handled)
{
    static PyObject *s_prop_name = NULL;
    *handled = 1;
    if (s_prop_name == NULL && (s_prop_name = PyUnicode_InternFromString("name")) == NULL)
        return NULL;
    PyObject *props = PyDict_GetItemWithError(value, s_properties);
    if (props == NULL && PyErr_Occurred())
        return NULL;
    PyObject *pkey;
    if (props == NULL || !PyList_Check(props))
        pkey = Py_NewRef(Py_None);
    else if (!PyList_CheckExact(props)) {
        *handled = 0;
        return NULL;
    }
    else {
        Py_INCREF(props);
        PyObject *pairs = PyList_New(0);
        for (Py_ssize_t i = 0; pairs != NULL && i < PyList_GET_SIZE(props); i++) {
            PyObject *p = Py_NewRef(PyList_GET_ITEM(props, i));
            if (PyDict_CheckExact(p)) {
                PyObject *name = PyDict_GetItemWithError(p, s_prop_name);
                PyObject *cls = name != NULL || !PyErr_Occurred()
                                    ? PyDict_GetItemWithError(p, s_class)
                                    : NULL;
                PyObject *pair = PyErr_Occurred()
                                     ? NULL
                                     : PyTuple_Pack(2, name != NULL ? name : Py_None,
                                                    cls != NULL ? cls : Py_None);
                if (pair == NULL || PyList_Append(pairs, pair) < 0)
                    Py_CLEAR(pairs);
                Py_XDECREF(pair);
            }
            else if (PyDict_Check(p)) { /* (a dict subclass: its `get` is the helper's) */
                *handled = 0;
                Py_CLEAR(pairs);
            }
            Py_DECREF(p);
        }
        Py_DECREF(props);
        if (pairs == NULL)
            return NULL;
        pkey = PyList_AsTuple(pairs);
        Py_DECREF(pairs);
        if (pkey == NULL)
            return NULL;
    }
    PyObject *key = NULL;
    PyObject *cls = PyDict_GetItemWithError(value, s_class);
    if (cls != NULL || !PyErr_Occurred()) {
        Py_XINCREF(cls);
        int raises = field_true(&c->get, ret, s_exceptions);
        if (raises >= 0)
            key = PyTuple_Pack(4, cls != NULL ? cls : Py_None, pkey, raises ? Py_True : Py_False,
                               PyDict_GET_SIZE(value) ? Py_True : Py_False);
        Py_XDECREF(cls);
    }
    Py_DECREF(pkey);
    return key;
}

/* The plain function call's key into `plain` (`actions_of`'s flat `_return_key`): new ref. */
static PyObject *
plain_key(const Context *c, PyObject *co_id, PyObject *ret)
{
    if (ret == Py_None)
        return PyTuple_Pack(2, co_id, Py_None);
    PyObject *value = get_field(&c->get, ret, s_return_value);
    if (value == NULL)
        return NULL;
    PyObject *key = NULL;
    if (value == Py_None) {
        int raises = field_true(&c->get, ret, s_exceptions);
        if (raises >= 0)
            key = PyTuple_Pack(2, co_id, raises ? Py_True : Py_False);
    }
    else {
        int has_props = PyDict_CheckExact(value) ? PyDict_Contains(value, s_properties) : 1;
        if (has_props < 0) {
            /* (an error) */
        }
        else if (!has_props) {
            PyObject *cls = PyDict_GetItemWithError(value, s_class);
            if (cls != NULL || !PyErr_Occurred()) {
                Py_XINCREF(cls);
                int raises = field_true(&c->get, ret, s_exceptions);
                if (raises >= 0)
                    key = PyTuple_Pack(4, co_id, cls != NULL ? cls : Py_None,
                                       raises ? Py_True : Py_False,
                                       PyDict_GET_SIZE(value) ? Py_True : Py_False);
                Py_XDECREF(cls);
            }
        }
        else {
            int handled = 0;
            PyObject *rkey =
                PyDict_CheckExact(value) ? return_key_here(c, ret, value, &handled) : NULL;
            if (rkey == NULL && !handled)
                rkey = PyObject_CallOneArg(c->return_key, ret);
            if (rkey != NULL) {
                key = PyTuple_Pack(3, co_id, rkey, Py_None);
                Py_DECREF(rkey);
            }
        }
    }
    Py_DECREF(value);
    return key;
}

/* A plain function call's action (new ref): `actions_of`'s inline branch. */
static PyObject *
plain_action(const Context *c, PyObject *node, PyObject *call, PyObject *co, PyObject *co_id,
             PyObject *callee, PyObject *caller)
{
    PyObject *ret = node_get(node, N_RET, s_ret);
    if (ret == NULL)
        return NULL;
    PyObject *action = NULL, *template = NULL, *labels = NULL, *event_labels = NULL,
             *elapsed = NULL, *event_id = NULL, *event_ids = NULL;
    PyObject *key = plain_key(c, co_id, ret);
    if (key == NULL)
        goto done;
    template = PyDict_GetItemWithError(c->plain, key);
    if (template != NULL)
        Py_INCREF(template);
    else {
        if (PyErr_Occurred())
            goto done;
        template = PyObject_CallFunctionObjArgs(c->template_of, call, ret, co, NULL);
        if (template == NULL || PyDict_SetItem(c->plain, key, template) < 0)
            goto done;
    }
    if (!PyTuple_Check(template) || PyTuple_GET_SIZE(template) < 4) {
        PyErr_SetString(PyExc_TypeError, "diagram_actions: a template is not a 4-tuple");
        goto done;
    }
    labels = Py_NewRef(PyTuple_GET_ITEM(template, 3));
    if ((event_labels = get_field(&c->get, call, s_labels)) == NULL)
        goto done;
    int truth = PyObject_IsTrue(event_labels);
    if (truth < 0)
        goto done;
    if (truth && PyList_Check(event_labels)) {
        PyObject *merged = PyObject_CallFunctionObjArgs(c->merge_labels, labels, event_labels, NULL);
        if (merged == NULL)
            goto done;
        Py_SETREF(labels, merged);
    }
    if (ret == Py_None)
        elapsed = Py_NewRef(Py_None);
    else {
        if ((elapsed = get_field(&c->get, ret, s_elapsed)) == NULL)
            goto done;
        if (!PyLong_Check(elapsed) && !PyFloat_Check(elapsed))
            Py_SETREF(elapsed, Py_NewRef(Py_None));
    }
    if ((event_id = get_field(&c->get, call, s_id)) == NULL)
        goto done;
    event_ids = event_id == Py_None ? PyList_New(0) : PyList_New(1);
    if (event_ids == NULL)
        goto done;
    if (event_id != Py_None)
        PyList_SET_ITEM(event_ids, 0, Py_NewRef(event_id));
    action = new_function(PyTuple_GET_ITEM(template, 0), caller, PyTuple_GET_ITEM(callee, 0),
                          PyTuple_GET_ITEM(callee, 2), PyTuple_GET_ITEM(callee, 3),
                          PyTuple_GET_ITEM(template, 1), PyTuple_GET_ITEM(template, 2), labels,
                          elapsed, event_ids);
done:
    Py_DECREF(ret);
    Py_XDECREF(key);
    Py_XDECREF(template);
    Py_XDECREF(labels);
    Py_XDECREF(event_labels);
    Py_XDECREF(elapsed);
    Py_XDECREF(event_id);
    Py_XDECREF(event_ids);
    return action;
}

/* A plain function call's bare action (new ref), when only digests are wanted. */
static PyObject *
digest_action(const Context *c, PyObject *node, PyObject *co, PyObject *co_id)
{
    PyObject *ret = node_get(node, N_RET, s_ret);
    if (ret == NULL)
        return NULL;
    int raises = PyObject_IsTrue(ret);
    if (raises > 0)
        raises = field_true(&c->get, ret, s_exceptions);
    Py_DECREF(ret);
    if (raises < 0)
        return NULL;
    PyObject *flag = raises ? Py_True : Py_False;
    PyObject *fkey = PyTuple_Pack(2, co_id, flag);
    if (fkey == NULL)
        return NULL;
    PyObject *digest = PyDict_GetItemWithError(c->digests, fkey);
    if (digest != NULL)
        Py_INCREF(digest);
    else if (!PyErr_Occurred()) {
        PyObject *ident = code_object_id(co);
        if (ident != NULL) {
            digest = PyObject_CallFunctionObjArgs(c->function_digest, ident, flag, NULL);
            Py_DECREF(ident);
            if (digest != NULL && PyDict_SetItem(c->digests, fkey, digest) < 0)
                Py_CLEAR(digest);
        }
    }
    Py_DECREF(fkey);
    if (digest == NULL)
        return NULL;
    PyObject *action = bare_or_digest(c, digest);
    Py_DECREF(digest);
    return action;
}

/* A new action of `action_type` as `Action(node_type, digest)` makes it. */
static PyObject *
new_action(long type, PyObject *digest)
{
    PyObject *kind = PyLong_FromLong(type);
    PyObject *children = kind == NULL ? NULL : PyList_New(0);
    PyObject *event_ids = children == NULL ? NULL : PyList_New(0);
    PyObject *a = event_ids == NULL ? NULL : action_type->tp_alloc(action_type, 0);
    if (a != NULL) {
        for (int i = 0; i < N_SLOTS; i++)
            set_slot(a, i, Py_None);
        set_slot(a, S_NODE_TYPE, kind);
        set_slot(a, S_DIGEST, digest);
        set_slot(a, S_SUBTREE_DIGEST, empty_str);
        set_slot(a, S_STATIC, Py_False);
        set_slot(a, S_CHILDREN, children);
        set_slot(a, S_EVENT_IDS, event_ids);
        set_slot(a, S_COUNT, zero);
    }
    Py_XDECREF(kind);
    Py_XDECREF(children);
    Py_XDECREF(event_ids);
    return a;
}

/* A SQL or HTTP action's `elapsed` (the return's, when a number; no return: None) and
 * `event_ids` ([the call's id], when it has one), as `ActionFactory` sets them: 0, or -1 with
 * an error. */
static int
set_timing(const Context *c, PyObject *action, PyObject *call, PyObject *ret)
{
    if (ret != Py_None) {
        PyObject *elapsed = get_field(&c->get, ret, s_elapsed);
        if (elapsed == NULL)
            return -1;
        if (PyLong_Check(elapsed) || PyFloat_Check(elapsed))
            set_slot(action, S_ELAPSED, elapsed);
        Py_DECREF(elapsed);
    }
    PyObject *event_id = get_field(&c->get, call, s_id);
    if (event_id == NULL)
        return -1;
    if (event_id != Py_None) {
        PyObject *ids = PyList_New(1);
        if (ids == NULL) {
            Py_DECREF(event_id);
            return -1;
        }
        PyList_SET_ITEM(ids, 0, Py_NewRef(event_id));
        set_slot(action, S_EVENT_IDS, ids);
        Py_DECREF(ids);
    }
    Py_DECREF(event_id);
    return 0;
}

/* `ActionFactory.special_call`'s SQL call made inline (new ref), or Py_None (a new reference)
 * when the call is not that case (the caller then calls `special_call`). */
static PyObject *
sql_action(const Context *c, PyObject *node, PyObject *call, PyObject *actor, PyObject *caller)
{
    PyObject *query = get_field(&c->get, call, s_sql_query);
    if (query == NULL)
        return NULL;
    PyObject *sql = NULL, *db = NULL, *skey = NULL, *digest = NULL, *action = NULL,
             *ret = NULL;
    if (!PyDict_CheckExact(query)) {
        action = Py_NewRef(Py_None);
        goto done;
    }
    sql = PyDict_GetItemWithError(query, s_normalized_sql);
    if (sql == NULL && PyErr_Occurred())
        goto done;
    Py_XINCREF(sql);
    int truth = sql == NULL ? 0 : PyObject_IsTrue(sql);
    if (truth < 0)
        goto done;
    if (!truth) {
        Py_XDECREF(sql);
        sql = PyDict_GetItemWithError(query, s_sql);
        if (sql == NULL && PyErr_Occurred())
            goto done;
        Py_XINCREF(sql);
    }
    if (sql == NULL || !PyUnicode_CheckExact(sql) || PyUnicode_GET_LENGTH(sql) == 0) {
        action = Py_NewRef(Py_None);
        goto done;
    }
    db = PyDict_GetItemWithError(query, s_database_type);
    if (db == NULL && PyErr_Occurred())
        goto done;
    db = Py_NewRef(db == NULL ? Py_None : db);
    if ((skey = PyTuple_Pack(2, sql, db)) == NULL)
        goto done;
    digest = PyDict_GetItemWithError(c->sql_digests, skey);
    if (digest != NULL)
        Py_INCREF(digest);
    else {
        if (PyErr_Occurred())
            goto done;
        digest = PyObject_CallFunctionObjArgs(c->sql_digest, sql, db, NULL);
        if (digest == NULL || PyDict_SetItem(c->sql_digests, skey, digest) < 0)
            goto done;
    }
    if (c->digests_only == Py_True) {
        action = bare_or_digest(c, digest);
        goto done;
    }
    if ((action = new_action(6 /* model.QUERY */, digest)) == NULL)
        goto done;
    set_slot(action, S_CALLER, caller);
    set_slot(action, S_CALLEE, actor);
    set_slot(action, S_QUERY, sql);
    if ((ret = node_get(node, N_RET, s_ret)) == NULL || set_timing(c, action, call, ret) < 0)
        goto failed;
    goto done;
failed:
    Py_CLEAR(action);
done:
    Py_DECREF(query);
    Py_XDECREF(sql);
    Py_XDECREF(db);
    Py_XDECREF(skey);
    Py_XDECREF(digest);
    Py_XDECREF(ret);
    return action;
}

/* `*co` swapped for what `unname_sql` makes it when the call is a SQL one (`*call` read then,
 * a new reference, if not yet): 1 when swapped, 0 when not, -1 with an error. */
static int
swap_sql(Context *c, PyObject *node, PyObject **call, PyObject **co, PyObject **co_id)
{
    if (*call == NULL && (*call = node_get(node, N_CALL, s_call)) == NULL)
        return -1;
    int sql = PySequence_Contains(*call, s_sql_query);
    if (sql <= 0)
        return sql;
    PyObject *other = PyDict_GetItemWithError(c->unnamed, *co_id);
    if (other != NULL)
        Py_INCREF(other);
    else if (!PyErr_Occurred()) {
        other = PyObject_CallOneArg(c->unname, *co);
        if (other != NULL && PyDict_SetItem(c->unnamed, *co_id, other) < 0)
            Py_CLEAR(other);
    }
    if (other == NULL)
        return -1;
    Py_SETREF(*co, other);
    Py_SETREF(*co_id, PyLong_FromVoidPtr(*co));
    return *co_id == NULL ? -1 : 1;
}

/* Whether `unname_sql` may swap `co` before its callee is made (1, 0, -1): a `query` not met
 * before (no callee yet), so a SQL call's own query needs none. */
static int
query_not_met(Context *c, PyObject *co, PyObject *co_id)
{
    PyObject *known = PyDict_GetItemWithError(c->callees, co_id);
    if (known != NULL)
        return 0;
    if (PyErr_Occurred())
        return -1;
    PyObject *type = PyObject_GetAttr(co, s_type);
    if (type == NULL)
        return -1;
    int query = PyUnicode_Check(type) && PyUnicode_CompareWithASCIIString(type, "query") == 0;
    Py_DECREF(type);
    return query;
}

/* `Actors.actor_for(co)` of actors without names (new ref: `anonymous` or None), remembered
 * in `nearest` as there. */
static PyObject *
anonymous_actor(const Context *c, PyObject *co, PyObject *co_id)
{
    PyObject *actor = PyDict_GetItemWithError(c->nearest, co_id);
    if (actor != NULL)
        return Py_NewRef(actor);
    if (PyErr_Occurred())
        return NULL;
    int modules = PyDict_GET_SIZE(c->modules) > 0;
    PyObject *obj = Py_NewRef(co);
    int found = 0;
    while (obj != Py_None) {
        PyObject *key = PyLong_FromVoidPtr(obj);
        if (key == NULL)
            goto failed;
        found = PyDict_Contains(c->included, key);
        Py_DECREF(key);
        if (found != 0)
            break;
        if (modules) { /* a module's class joins its package's lifeline */
            PyObject *type = PyObject_GetAttr(obj, s_type);
            if (type == NULL)
                goto failed;
            int is_class = PyObject_RichCompareBool(type, s_class, Py_EQ);
            Py_DECREF(type);
            if (is_class < 0)
                goto failed;
            if (is_class) {
                PyObject *ident = code_object_id(obj);
                if (ident == NULL)
                    goto failed;
                found = PyDict_Contains(c->modules, ident);
                Py_DECREF(ident);
                if (found != 0)
                    break;
            }
        }
        Py_SETREF(obj, PyObject_GetAttr(obj, s_co_parent));
        if (obj == NULL)
            return NULL;
    }
    if (found < 0)
        goto failed;
    Py_DECREF(obj);
    actor = found ? c->anonymous : Py_None;
    if (PyDict_SetItem(c->nearest, co_id, actor) < 0)
        return NULL;
    return Py_NewRef(actor);
failed:
    Py_DECREF(obj);
    return NULL;
}

/* `ActionFactory.callee(co, actors)` for actors without names (new ref), made here; Py_None
 * (a new reference) when `co.type` is not a str (then `callee_of` makes it). */
static PyObject *
anonymous_callee(const Context *c, PyObject *co, PyObject *co_id)
{
    PyObject *type = PyObject_GetAttr(co, s_type);
    if (type == NULL)
        return NULL;
    if (!PyUnicode_CheckExact(type)) {
        Py_DECREF(type);
        return Py_NewRef(Py_None);
    }
    /* `co.type in _SPECIAL_TYPES` */
    int special = PyUnicode_Compare(type, s_query) == 0 || PyUnicode_Compare(type, s_route) == 0 ||
                  PyUnicode_Compare(type, s_external_route) == 0;
    Py_DECREF(type);
    PyObject *actor = anonymous_actor(c, co, co_id), *name = NULL, *is_static = NULL,
             *callee = NULL;
    if (actor != NULL && (name = PyObject_GetAttr(co, s_co_name)) != NULL &&
        (is_static = PyObject_GetAttr(co, s_co_static)) != NULL)
        callee = PyTuple_Pack(4, actor, special ? Py_True : Py_False, name, is_static);
    Py_XDECREF(actor);
    Py_XDECREF(name);
    Py_XDECREF(is_static);
    return callee;
}

/* The callee tuple of a call's code object (new ref), from `callees` or made by `callee_of`. */
static PyObject *
callee_for(const Context *c, PyObject *co, PyObject *co_id)
{
    PyObject *callee = PyDict_GetItemWithError(c->callees, co_id);
    if (callee != NULL)
        callee = Py_NewRef(callee);
    else {
        if (PyErr_Occurred())
            return NULL;
        callee = c->anonymous == NULL ? Py_NewRef(Py_None) : anonymous_callee(c, co, co_id);
        if (callee == Py_None)
            Py_SETREF(callee, PyObject_CallFunctionObjArgs(c->callee_of, co, c->actors, NULL));
        if (callee != NULL && PyDict_SetItem(c->callees, co_id, callee) < 0)
            Py_CLEAR(callee);
    }
    if (callee != NULL && (!PyTuple_Check(callee) || PyTuple_GET_SIZE(callee) < 4)) {
        PyErr_SetString(PyExc_TypeError, "diagram_actions: a callee is not a 4-tuple");
        Py_CLEAR(callee);
    }
    return callee;
}

/* What an HTTP request's digest is made of, `builder._rpc_key` (the key of `_RPC_FIELDS`
 * order): new ref, or Py_None (a new reference) where `_rpc_key` returns None. */
static PyObject *s_http_server_request, *s_http_client_request, *s_http_server_response,
    *s_http_client_response, *s_request_method, *s_normalized_path_info, *s_path_info, *s_url,
    *s_status, *s_status_code;

static int
intern_rpc_names(void)
{
    if (s_status_code != NULL)
        return 0;
#define INTERN(var, text)                                   \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return -1;
    INTERN(s_http_server_request, "http_server_request")
    INTERN(s_http_client_request, "http_client_request")
    INTERN(s_http_server_response, "http_server_response")
    INTERN(s_http_client_response, "http_client_response")
    INTERN(s_request_method, "request_method")
    INTERN(s_normalized_path_info, "normalized_path_info")
    INTERN(s_path_info, "path_info")
    INTERN(s_url, "url")
    INTERN(s_status, "status")
    INTERN(s_status_code, "status_code") /* last: the "done" mark */
#undef INTERN
    return 0;
}

/* The fields of one event's object `name` (read through the getter, as `event.get(name)`; a
 * new reference in `*held`) put in `items` at `*at` (`_rpc_key`'s loop body, borrowed from
 * it: exact dicts read with str keys run no Python code): 1, 0 when `_rpc_key` gives up (an
 * odd value), -1 with an error. */
static int
rpc_fields(const Context *c, PyObject **items, int *at, PyObject *event, PyObject *name,
           PyObject *const *fields, int n, PyObject **held)
{
    PyObject *value = get_field(&c->get, event, name); /* (`event.get(name)`) */
    if (value == NULL)
        return -1;
    *held = value; /* (the caller's reference, released once the key holds its items) */
    if (!PyDict_Check(value)) { /* (read as no object) */
        items[(*at)++] = c->no_object;
        return 1;
    }
    if (!PyDict_CheckExact(value))
        return 0;
    for (int i = 0; i < n; i++) {
        PyObject *item = PyDict_GetItemWithError(value, fields[i]);
        if (item == NULL) {
            if (PyErr_Occurred())
                return -1;
            item = Py_None;
        }
        else if (!PyUnicode_CheckExact(item) && !PyLong_CheckExact(item))
            return 0;
        items[(*at)++] = item;
    }
    /* (a server request's path_info is not read after a non-empty normalized_path_info) */
    if (n == 3 && PyUnicode_CheckExact(items[*at - 2]) && PyUnicode_GET_LENGTH(items[*at - 2]))
        items[*at - 1] = Py_None;
    return 1;
}

#define RPC_KEY_SIZE 13

/* `_rpc_key(kind, call, ret, client_routes)` of events as dicts: new ref, or Py_None (a new
 * reference) where `_rpc_key` returns None. */
static PyObject *
rpc_key(const Context *c, PyObject *kind, PyObject *call, PyObject *ret, int server, int client)
{
    PyObject *const server_fields[] = {s_request_method, s_normalized_path_info, s_path_info};
    PyObject *const client_fields[] = {s_request_method, s_url};
    PyObject *const response_fields[] = {s_status, s_status_code};
    PyObject *items[RPC_KEY_SIZE];
    int at = 0;
    items[at++] = kind;
    items[at++] = c->client_routes;
    items[at++] = server ? Py_True : Py_False;
    PyObject *held[4] = {NULL, NULL, NULL, NULL};
    int rc = rpc_fields(c, items, &at, call, s_http_server_request, server_fields, 3, &held[0]);
    if (rc > 0) {
        items[at++] = client ? Py_True : Py_False;
        rc = rpc_fields(c, items, &at, call, s_http_client_request, client_fields, 2, &held[1]);
    }
    if (rc > 0)
        rc = rpc_fields(c, items, &at, ret, s_http_server_response, response_fields, 2,
                        &held[2]);
    if (rc > 0)
        rc = rpc_fields(c, items, &at, ret, s_http_client_response, response_fields, 2,
                        &held[3]);
    PyObject *key = NULL;
    if (rc == 0)
        key = Py_NewRef(Py_None);
    else if (rc > 0 && (key = PyTuple_New(at)) != NULL)
        for (int i = 0; i < at; i++)
            PyTuple_SET_ITEM(key, i, Py_NewRef(items[i]));
    for (int i = 0; i < 4; i++)
        Py_XDECREF(held[i]);
    return key;
}

/* `name in event`: 1, 0, or -1 with an error (an exact dict's keys, else the event's `in`). */
static int
event_has(PyObject *event, PyObject *name)
{
    return PyDict_CheckExact(event) ? PyDict_Contains(event, name)
                                    : PySequence_Contains(event, name);
}

/* The action of an HTTP request with its response when `rpcs` holds its `_rpc_key`, as
 * `ActionFactory.special_call` makes it (new ref): `digest_action`'s bare action when the walk
 * makes digests only, else `action`'s (`_special`'s server or client request, its caller only
 * for a client one, the callee `actor`, its elapsed time and event id); Py_None (a new
 * reference) otherwise (the caller then calls `special_call`, which makes and remembers it).
 * Events are exact dicts, or slim structs read with getattr (their `in` asked of them). */
static PyObject *
rpc_action(const Context *c, PyObject *node, PyObject *call, PyObject *actor, PyObject *caller)
{
    if (c->rpcs == NULL || !(PyDict_CheckExact(call) || (!PyDict_Check(call) && c->get.mode == 1)))
        return Py_NewRef(Py_None);
    int sql = event_has(call, s_sql_query);
    int server = sql != 0 ? sql : event_has(call, s_http_server_request);
    int client = server < 0 || sql != 0 ? 0 : event_has(call, s_http_client_request);
    if (sql < 0 || server < 0 || client < 0) {
        if (PyDict_CheckExact(call) || !PyErr_ExceptionMatches(PyExc_TypeError))
            return NULL;
        PyErr_Clear(); /* (an event without `in`: Python's to read) */
        return Py_NewRef(Py_None);
    }
    if (sql || (!server && !client))
        return Py_NewRef(Py_None);
    PyObject *ret = node_get(node, N_RET, s_ret);
    if (ret == NULL)
        return NULL;
    PyObject *kind = NULL, *key = NULL, *action = NULL;
    if (ret == Py_None || PyDict_Check(ret) != PyDict_Check(call) ||
        (PyDict_Check(ret) && !PyDict_CheckExact(ret))) { /* (`_special` makes it) */
        action = Py_NewRef(Py_None);
        goto done;
    }
    /* `"http_server_request" in call and ret.get("http_server_response")`, then the client's */
    for (int side = 0; side < 2 && kind == NULL; side++) {
        if (!(side == 0 ? server : client))
            continue;
        PyObject *resp =
            get_field(&c->get, ret, side == 0 ? s_http_server_response : s_http_client_response);
        if (resp == NULL)
            goto done;
        int truth = PyObject_IsTrue(resp);
        Py_DECREF(resp);
        if (truth < 0)
            goto done;
        if (truth)
            kind = side == 0 ? c->server_rpc : c->client_rpc;
    }
    if (kind == NULL) {
        action = Py_NewRef(Py_None);
        goto done;
    }
    if ((key = rpc_key(c, kind, call, ret, server, client)) == NULL)
        goto done;
    PyObject *found = key == Py_None ? NULL : PyDict_GetItemWithError(c->rpcs, key);
    if (found == NULL && PyErr_Occurred())
        goto done;
    if (found == NULL || !PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) != 3) {
        action = Py_NewRef(Py_None);
        goto done;
    }
    if (c->digests_only == Py_True) {
        action = bare_or_digest(c, PyTuple_GET_ITEM(found, 0));
        goto done;
    }
    int is_server = kind == c->server_rpc;
    if ((action = new_action(is_server ? 4 : 5, PyTuple_GET_ITEM(found, 0))) == NULL)
        goto done;
    if (!is_server)
        set_slot(action, S_CALLER, caller);
    set_slot(action, S_ROUTE, PyTuple_GET_ITEM(found, 1));
    set_slot(action, S_STATUS, PyTuple_GET_ITEM(found, 2));
    set_slot(action, S_CALLEE, actor);
    if (set_timing(c, action, call, ret) < 0)
        goto failed;
    goto done;
failed:
    Py_CLEAR(action);
done:
    Py_DECREF(ret);
    Py_XDECREF(key);
    return action;
}

/* One call's action (new ref), or NULL with an error; `*made` is 0 when the call has no
 * lifeline (left out: its children move up). */
static PyObject *
action_of(Context *c, PyObject *node, PyObject *parent, PyObject *cos, PyObject *kept,
          int *made)
{
    *made = 0;
    PyObject *action = NULL, *co_id = NULL, *callee = NULL, *call = NULL, *caller = NULL;
    PyObject *node_id = NULL, *co = NULL;
    Py_ssize_t at = c->visited++;
    if (c->in_nodes != NULL && at < PyList_GET_SIZE(c->in_nodes) &&
        at < PyList_GET_SIZE(c->in_cos) && PyList_GET_ITEM(c->in_nodes, at) == node)
        co = Py_NewRef(PyList_GET_ITEM(c->in_cos, at)); /* (`cos[id(node)]`, read in order) */
    else {
        if ((node_id = PyLong_FromVoidPtr(node)) == NULL)
            return NULL;
        co = PyDict_GetItemWithError(cos, node_id); /* (borrowed: cos holds it) */
        if (co == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, node_id);
            goto done;
        }
        Py_INCREF(co);
    }
    int included = 1;
    if (kept != Py_None) {
        if (node_id == NULL && (node_id = PyLong_FromVoidPtr(node)) == NULL)
            goto done;
        if ((included = PySequence_Contains(kept, node_id)) < 0)
            goto done;
    }
    int swapped = 0; /* (by `unname_sql`) */
    if (included) {
        if ((co_id = PyLong_FromVoidPtr(co)) == NULL)
            goto done;
        if (c->unname != Py_None) {
            int query = query_not_met(c, co, co_id);
            if (query < 0 || (query && (swapped = swap_sql(c, node, &call, &co, &co_id)) < 0))
                goto done;
        }
        if ((callee = callee_for(c, co, co_id)) == NULL)
            goto done;
    }
    else
        callee = Py_NewRef(c->left_out);
    if (!PyTuple_Check(callee) || PyTuple_GET_SIZE(callee) < 4) {
        PyErr_SetString(PyExc_TypeError, "diagram_actions: a callee is not a 4-tuple");
        goto done;
    }
    /* A SQL call's code object as `without_sql_names` binds it, the unnamed query: only
     * asked of calls whose code object may be a SQL one (`callee[1]`), so the other calls'
     * events are not read for it (a query met for the first time is swapped above, before
     * its callee is made) */
    int maybe_sql = c->unname == Py_None || swapped
                        ? 0
                        : PyObject_IsTrue(PyTuple_GET_ITEM(callee, 1));
    if (maybe_sql < 0)
        goto done;
    if (maybe_sql) {
        int sql = swap_sql(c, node, &call, &co, &co_id);
        if (sql < 0)
            goto done;
        if (sql) {
            Py_CLEAR(callee);
            if ((callee = callee_for(c, co, co_id)) == NULL)
                goto done;
        }
    }
    PyObject *actor = PyTuple_GET_ITEM(callee, 0);
    if (actor == Py_None) {
        action = Py_NewRef(Py_None);
        goto done;
    }
    if (call == NULL && (call = node_get(node, N_CALL, s_call)) == NULL)
        goto done;
    int special = PyObject_IsTrue(PyTuple_GET_ITEM(callee, 1));
    if (special < 0)
        goto done;
    if (special && c->digests_only == Py_True) {
        caller = Py_NewRef(Py_None); /* (unused: a bare action has none) */
        action = sql_action(c, node, call, actor, caller);
        if (action == Py_None) { /* an HTTP request whose digest `_rpc` remembers */
            Py_DECREF(action);
            action = rpc_action(c, node, call, actor, caller);
        }
        if (action == Py_None) {
            Py_DECREF(action);
            Py_CLEAR(caller);
            caller = parent == NULL ? Py_NewRef(Py_None) : action_slot(parent, S_CALLEE, s_callee);
            action = caller == NULL ? NULL
                                    : PyObject_CallFunctionObjArgs(c->special, node, co, actor,
                                                                   caller, c->get.get,
                                                                   c->digests_only, NULL);
        }
    }
    else if (!special && c->digests_only == Py_True) {
        action = digest_action(c, node, co, co_id);
    }
    else {
        caller = parent == NULL ? Py_NewRef(Py_None) : action_slot(parent, S_CALLEE, s_callee);
        if (caller == NULL)
            goto done;
        if (special) {
            action = sql_action(c, node, call, actor, caller);
            if (action == Py_None) { /* an HTTP request whose action `_rpc` remembers */
                Py_DECREF(action);
                action = rpc_action(c, node, call, actor, caller);
            }
            if (action == Py_None) {
                Py_DECREF(action);
                action = PyObject_CallFunctionObjArgs(c->special, node, co, actor, caller,
                                                      c->get.get, c->digests_only, NULL);
            }
        }
        else
            action = plain_action(c, node, call, co, co_id, callee, caller);
    }
    if (action != NULL)
        *made = 1;
done:
    Py_XDECREF(node_id);
    Py_XDECREF(co);
    Py_XDECREF(co_id);
    Py_XDECREF(callee);
    Py_XDECREF(call);
    Py_XDECREF(caller);
    return action;
}

/* `context` (and digests_only) read into `c` (module doc: `diagram_actions`), its Action class
 * and CallNode class in `*type` and `*call_node` (borrowed): 0, or -1 with an error. */
static int
read_context(PyObject *context, PyObject *digests_only, Context *c, PyObject **type)
{
    PyObject *mode, *call_node, *in_order, *anonymous, *rpc = Py_None;
    if (!PyTuple_Check(context)) {
        PyErr_SetString(PyExc_TypeError, "diagram_actions: context is not a tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(context, "O!OOOO!OOO!OOOOOOO!OOOOO!O|O:diagram_actions context",
                          &PyDict_Type, &c->callees, &c->callee_of, &c->actors, &c->special,
                          &PyDict_Type, &c->plain, &c->template_of, &c->return_key,
                          &PyDict_Type, &c->digests, &c->function_digest, &c->merge_labels,
                          &c->get.get, &mode, type, &c->left_out, &PyDict_Type,
                          &c->sql_digests, &c->sql_digest, &call_node, &in_order, &c->unname,
                          &PyDict_Type, &c->unnamed, &anonymous, &rpc))
        return -1;
    c->want_digest = 0;
    /* rpc: None, or (rpcs, SERVER_RPC, CLIENT_RPC, client_routes, _NO_OBJECT) (borrowed: the
     * context holds them) */
    c->rpcs = c->server_rpc = c->client_rpc = c->client_routes = c->no_object = NULL;
    if (rpc != Py_None) {
        if (!PyTuple_Check(rpc) || PyTuple_GET_SIZE(rpc) != 5 ||
            !PyDict_CheckExact(PyTuple_GET_ITEM(rpc, 0))) {
            PyErr_SetString(PyExc_TypeError, "diagram_actions: rpc is not (dict, 4 values)");
            return -1;
        }
        if (intern_rpc_names() < 0)
            return -1;
        c->rpcs = PyTuple_GET_ITEM(rpc, 0);
        c->server_rpc = PyTuple_GET_ITEM(rpc, 1);
        c->client_rpc = PyTuple_GET_ITEM(rpc, 2);
        c->client_routes = PyTuple_GET_ITEM(rpc, 3);
        c->no_object = PyTuple_GET_ITEM(rpc, 4);
    }
    c->anonymous = c->included = c->modules = c->nearest = NULL;
    if (anonymous != Py_None) { /* callees made here when `actors` names none */
        PyObject *named = PyObject_GetAttr(c->actors, s_named);
        PyObject *included = named == NULL ? NULL : PyObject_GetAttr(c->actors, s_included);
        PyObject *modules = included == NULL ? NULL : PyObject_GetAttr(c->actors, s_modules);
        PyObject *nearest = modules == NULL ? NULL : PyObject_GetAttr(c->actors, s_nearest);
        if (nearest == NULL)
            PyErr_Clear(); /* (not an `Actors`: `callee_of` makes every callee) */
        else if (named == Py_False && PyDict_CheckExact(included) &&
                 PyDict_CheckExact(modules) && PyDict_CheckExact(nearest)) {
            /* (borrowed: `actors` holds them for the walk) */
            c->anonymous = anonymous;
            c->included = included;
            c->modules = modules;
            c->nearest = nearest;
        }
        Py_XDECREF(named);
        Py_XDECREF(included);
        Py_XDECREF(modules);
        Py_XDECREF(nearest);
    }
    c->in_nodes = c->in_cos = NULL;
    c->visited = 0;
    if (in_order != Py_None) {
        if (!PyTuple_Check(in_order) || PyTuple_GET_SIZE(in_order) != 2 ||
            !PyList_Check(PyTuple_GET_ITEM(in_order, 0)) ||
            !PyList_Check(PyTuple_GET_ITEM(in_order, 1))) {
            PyErr_SetString(PyExc_TypeError, "diagram_actions: in_order is not two lists");
            return -1;
        }
        c->in_nodes = PyTuple_GET_ITEM(in_order, 0);
        c->in_cos = PyTuple_GET_ITEM(in_order, 1);
    }
    if (intern_tree_names() < 0 || learn_node_type(call_node) < 0)
        return -1;
    c->get.mode = (int)PyLong_AsLong(mode);
    if (c->get.mode == -1 && PyErr_Occurred())
        return -1;
    int truth = PyObject_IsTrue(digests_only);
    if (truth < 0)
        return -1;
    c->digests_only = truth ? Py_True : Py_False;
    return 0;
}

PyObject *
tt_diagram_actions(PyObject *self, PyObject *args)
{
    PyObject *call_roots, *cos, *kept, *order, *digests_only, *context;
    if (!PyArg_ParseTuple(args, "O!O!OOOO!:diagram_actions", &PyList_Type, &call_roots,
                          &PyDict_Type, &cos, &kept, &order, &digests_only, &PyTuple_Type,
                          &context))
        return NULL;
    if (intern_names() < 0)
        return NULL;
    Context c;
    PyObject *type;
    if (read_context(context, digests_only, &c, &type) < 0)
        return NULL;
    int learned = learn_action_type(type);
    if (learned < 0)
        return NULL;
    if (learned > 0 || (order != Py_None && !PyList_Check(order)))
        Py_RETURN_NOTIMPLEMENTED;

    PyObject *roots = PyList_New(0);
    if (roots == NULL)
        return NULL;
    Stack stack = {NULL, 0, 0};
    for (Py_ssize_t i = PyList_GET_SIZE(call_roots); i-- > 0;)
        if (push(&stack, PyList_GET_ITEM(call_roots, i), NULL) < 0)
            goto error;
    while (stack.size) {
        Item item = stack.items[--stack.size]; /* (its references are ours now) */
        int made;
        PyObject *action = action_of(&c, item.node, item.parent, cos, kept, &made);
        if (action == NULL) {
            Py_DECREF(item.node);
            Py_XDECREF(item.parent);
            goto error;
        }
        if (made) {
            int failed;
            if (item.parent == NULL)
                failed = PyList_Append(roots, action);
            else {
                PyObject *siblings = action_slot(item.parent, S_CHILDREN, s_children);
                failed = siblings == NULL || append_to(siblings, action) < 0;
                Py_XDECREF(siblings);
            }
            if (!failed && order != Py_None)
                failed = PyList_Append(order, action);
            if (failed) {
                Py_DECREF(action);
                Py_DECREF(item.node);
                Py_XDECREF(item.parent);
                goto error;
            }
        }
        else { /* left out: the children hang from the parent's action */
            Py_DECREF(action);
            action = item.parent;
            item.parent = NULL;
        }
        PyObject *children = node_get(item.node, N_CHILDREN, s_children);
        Py_DECREF(item.node);
        Py_XDECREF(item.parent);
        int failed = children == NULL;
        if (!failed) {
            failed = push_all(&stack, children, action) < 0;
            Py_DECREF(children);
        }
        Py_XDECREF(action);
        if (failed)
            goto error;
    }
    free(stack.items);
    return roots;
error:
    clear_stack(&stack);
    Py_DECREF(roots);
    return NULL;
}


/* ------------------------------------------------------------------ the call tree */

/* call_tree(events, roots, nodes, stacks, CallNode, get, mode) -> None: what
 * `tracetool.trace.tree.CallTreeBuilder.add(events)` does to a builder's `roots`, `nodes` and
 * `stacks` (a builder without `created`), event for event; `get` and `mode` as in
 * `diagram_actions`. NotImplemented (nothing done) when CallNode is not a class whose slots
 * this file knows how to fill. */

static PyObject *s_event, *s_thread_id, *s_parent_id, *s_return, *s_open, *s_parent;

#define NODE_SLOT(obj, i) (*(PyObject **)((char *)(obj) + node_offsets[i]))

/* `node.<slot>` (new ref), in place for nodes of the known class */
static PyObject *
node_get(PyObject *node, int i, PyObject *name)
{
    if (Py_TYPE(node) == node_type) {
        PyObject *value = NODE_SLOT(node, i);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(node, name);
}

static int
node_set(PyObject *node, int i, PyObject *name, PyObject *value)
{
    if (Py_TYPE(node) != node_type)
        return PyObject_SetAttr(node, name, value);
    PyObject *old = NODE_SLOT(node, i);
    NODE_SLOT(node, i) = Py_NewRef(value);
    Py_XDECREF(old);
    return 0;
}

/* `CallNode`'s slot offsets (`learn_slots`) */
static int
learn_node_type(PyObject *type)
{
    return learn_slots(type, node_slot_names, N_NODE_SLOTS, node_offsets, &node_type);
}

static int
intern_tree_names(void)
{
    if (s_parent != NULL)
        return 0;
#define INTERN(var, text)                                   \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return -1;
    INTERN(s_event, "event")
    INTERN(s_thread_id, "thread_id")
    INTERN(s_parent_id, "parent_id")
    INTERN(s_return, "return")
    INTERN(s_open, "_open")
    INTERN(s_parent, "parent") /* last: the "done" mark */
#undef INTERN
    return 0;
}

/* A call event: its node, under the innermost open call of its thread (or a root). */
static int
tree_call(const Getter *g, PyObject *event, PyObject *roots, PyObject *nodes, PyObject *stacks)
{
    int rc = -1;
    PyObject *node = NULL, *children = NULL, *event_id = NULL;
    PyObject *thread = get_field(g, event, s_thread_id);
    if (thread == NULL)
        return -1;
    PyObject *stack = PyDict_GetItemWithError(stacks, thread); /* (borrowed: stacks holds it) */
    if (stack == NULL) {
        if (PyErr_Occurred() || (stack = PyList_New(0)) == NULL)
            goto done;
        int failed = PyDict_SetItem(stacks, thread, stack);
        Py_DECREF(stack);
        if (failed < 0)
            goto done;
    }
    if (!PyList_Check(stack)) {
        PyErr_SetString(PyExc_TypeError, "call_tree: a thread's stack is not a list");
        goto done;
    }
    Py_ssize_t depth = PyList_GET_SIZE(stack);
    PyObject *parent = depth ? PyList_GET_ITEM(stack, depth - 1) : Py_None;
    Py_INCREF(parent);
    if ((children = PyList_New(0)) == NULL || (node = node_type->tp_alloc(node_type, 0)) == NULL) {
        Py_DECREF(parent);
        goto done;
    }
    NODE_SLOT(node, N_CALL) = Py_NewRef(event);
    NODE_SLOT(node, N_RET) = Py_NewRef(Py_None);
    NODE_SLOT(node, N_PARENT) = parent; /* (the reference taken above) */
    NODE_SLOT(node, N_CHILDREN) = Py_NewRef(children);
    NODE_SLOT(node, N_OPEN) = Py_NewRef(Py_True);
    if (parent != Py_None) {
        PyObject *siblings = node_get(parent, N_CHILDREN, s_children);
        int failed = siblings == NULL || append_to(siblings, node) < 0;
        Py_XDECREF(siblings);
        if (failed)
            goto done;
    }
    else if (PyList_Append(roots, node) < 0)
        goto done;
    if (PyList_Append(stack, node) < 0)
        goto done;
    if ((event_id = get_field(g, event, s_id)) == NULL || PyDict_SetItem(nodes, event_id, node) < 0)
        goto done;
    rc = 0;
done:
    Py_DECREF(thread);
    Py_XDECREF(node);
    Py_XDECREF(children);
    Py_XDECREF(event_id);
    return rc;
}

/* A return event: the return of its call (by parent_id, else its thread's innermost open
 * call), closing that call and every call opened inside it. */
static int
tree_return(const Getter *g, PyObject *event, PyObject *nodes, PyObject *stacks)
{
    int rc = -1;
    PyObject *target = NULL, *stack = NULL, *key = NULL;
    PyObject *parent_id = get_field(g, event, s_parent_id);
    if (parent_id == NULL)
        return -1;
    if (parent_id == Py_None) {
        if ((key = get_field(g, event, s_thread_id)) == NULL)
            goto done;
    }
    else {
        target = PyDict_GetItemWithError(nodes, parent_id);
        if (target == NULL) {
            rc = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        Py_INCREF(target);
        PyObject *call = node_get(target, N_CALL, s_call);
        if (call == NULL)
            goto done;
        key = get_field(g, call, s_thread_id);
        Py_DECREF(call);
        if (key == NULL)
            goto done;
    }
    stack = PyDict_GetItemWithError(stacks, key); /* `stacks.get(...) or []` */
    if (stack == NULL && PyErr_Occurred())
        goto done;
    Py_XINCREF(stack);
    if (stack != NULL) {
        int truth = PyObject_IsTrue(stack);
        if (truth < 0)
            goto done;
        if (!truth)
            Py_CLEAR(stack);
    }
    if (stack != NULL && !PyList_Check(stack)) {
        PyErr_SetString(PyExc_TypeError, "call_tree: a thread's stack is not a list");
        goto done;
    }
    if (target == NULL) {
        if (stack == NULL) {
            rc = 0;
            goto done;
        }
        target = Py_NewRef(PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1));
    }
    PyObject *ret = node_get(target, N_RET, s_ret);
    if (ret == NULL)
        goto done;
    int unset = ret == Py_None;
    Py_DECREF(ret);
    if (unset && node_set(target, N_RET, s_ret, event) < 0)
        goto done;
    PyObject *open = node_get(target, N_OPEN, s_open);
    if (open == NULL)
        goto done;
    int is_open = PyObject_IsTrue(open);
    Py_DECREF(open);
    if (is_open < 0)
        goto done;
    if (is_open && stack != NULL) {
        while (PyList_GET_SIZE(stack)) {
            Py_ssize_t n = PyList_GET_SIZE(stack);
            PyObject *popped = Py_NewRef(PyList_GET_ITEM(stack, n - 1));
            if (PyList_SetSlice(stack, n - 1, n, NULL) < 0 ||
                node_set(popped, N_OPEN, s_open, Py_False) < 0) {
                Py_DECREF(popped);
                goto done;
            }
            Py_DECREF(popped);
            if (popped == target)
                break;
        }
    }
    rc = 0;
done:
    Py_DECREF(parent_id);
    Py_XDECREF(target);
    Py_XDECREF(stack);
    Py_XDECREF(key);
    return rc;
}

PyObject *
tt_call_tree(PyObject *self, PyObject *args)
{
    PyObject *events, *roots, *nodes, *stacks, *type, *mode;
    Getter g;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOO:call_tree", &PyList_Type, &events, &PyList_Type,
                          &roots, &PyDict_Type, &nodes, &PyDict_Type, &stacks, &type, &g.get,
                          &mode))
        return NULL;
    if (intern_names() < 0 || intern_tree_names() < 0)
        return NULL;
    g.mode = (int)PyLong_AsLong(mode);
    if (g.mode == -1 && PyErr_Occurred())
        return NULL;
    int learned = learn_node_type(type);
    if (learned < 0)
        return NULL;
    if (learned > 0)
        Py_RETURN_NOTIMPLEMENTED;
    /* (as `add` reads its first event: a None there reads as no events at all) */
    if (PyList_GET_SIZE(events) && PyList_GET_ITEM(events, 0) == Py_None)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = Py_NewRef(PyList_GET_ITEM(events, i));
        PyObject *kind = get_field(&g, event, s_event);
        int rc = kind == NULL ? -1 : PyObject_RichCompareBool(kind, s_call, Py_EQ);
        if (rc > 0)
            rc = tree_call(&g, event, roots, nodes, stacks);
        else if (rc == 0) {
            rc = PyObject_RichCompareBool(kind, s_return, Py_EQ);
            if (rc > 0)
                rc = tree_return(&g, event, nodes, stacks);
        }
        Py_XDECREF(kind);
        Py_DECREF(event);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}


/* ------------------------------------------------------------------ subtree digests */

/* subtree_digests(order, leaves, inner, leaf_digest, inner_digest, fold, Action) -> None:
 * `tracetool.diagram.builder._subtree_digests`' loop over `order` (parents first, walked
 * backwards): a leaf's subtree digest from `leaves` by its digest (`leaf_digest(digest)` when
 * missing), an inner action's from `inner` by (its digest, its children's subtree digests...)
 * (`inner_digest(key)` when missing); then, with `fold` (not None), its children folded when two
 * of them have equal subtree digests (`loops.fold` returns them unchanged otherwise). */

static PyObject *s_digest, *s_subtree_digest;

static int
set_action_slot(PyObject *action, int i, PyObject *name, PyObject *value)
{
    if (Py_TYPE(action) != action_type)
        return PyObject_SetAttr(action, name, value);
    set_slot(action, i, value);
    return 0;
}

/* Whether two items of `digests` (a tuple of strings, from index 1) are equal: 1, 0, -1. */
static int
has_equal(PyObject *key)
{
    Py_ssize_t n = PyTuple_GET_SIZE(key);
    if (n > 34)
        return 1; /* (many children: `fold` tells) */
    for (Py_ssize_t i = 1; i < n; i++)
        for (Py_ssize_t j = i + 1; j < n; j++) {
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, i), PyTuple_GET_ITEM(key, j),
                                              Py_EQ);
            if (eq != 0)
                return eq;
        }
    return 0;
}

static PyObject *s_hexdigest;

/* `sha256(text.encode()).hexdigest()` of the items of `parts` (strings) joined by newlines,
 * as `builder._leaf_digest` (one item) and `_inner_digest` make it, without their Python
 * frames and the joined text's two copies: a new reference, or NULL with `*declined` set and
 * no error when an item is not an exact ASCII str (the Python function then decides). */
static PyObject *
joined_sha256(PyObject *sha256, PyObject *const *parts, Py_ssize_t n, int *declined)
{
    *declined = 0;
    Py_ssize_t size = n > 0 ? n - 1 : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_CheckExact(parts[i]) || !PyUnicode_IS_COMPACT_ASCII(parts[i])) {
            *declined = 1;
            return NULL;
        }
        size += PyUnicode_GET_LENGTH(parts[i]);
    }
    if (s_hexdigest == NULL && (s_hexdigest = PyUnicode_InternFromString("hexdigest")) == NULL)
        return NULL;
    PyObject *data = PyBytes_FromStringAndSize(NULL, size);
    if (data == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(data);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0)
            *out++ = '\n';
        Py_ssize_t len = PyUnicode_GET_LENGTH(parts[i]);
        memcpy(out, PyUnicode_DATA(parts[i]), (size_t)len);
        out += len;
    }
    PyObject *hash = PyObject_CallOneArg(sha256, data);
    Py_DECREF(data);
    if (hash == NULL)
        return NULL;
    PyObject *hex = PyObject_CallMethodNoArgs(hash, s_hexdigest);
    Py_DECREF(hash);
    return hex;
}

/* `leaf_digest(own)` or `inner_digest(key)` (new ref): by `joined_sha256` when `sha256` is
 * given and takes the parts */
static PyObject *
subtree_hash(PyObject *sha256, PyObject *digest_of, PyObject *arg, PyObject *const *parts,
             Py_ssize_t n)
{
    if (sha256 != NULL) {
        int declined;
        PyObject *hex = joined_sha256(sha256, parts, n, &declined);
        if (hex != NULL || !declined)
            return hex;
    }
    return PyObject_CallOneArg(digest_of, arg);
}

static int
subtree_of(PyObject *a, PyObject *leaves, PyObject *inner, PyObject *leaf_digest,
           PyObject *inner_digest, PyObject *fold, PyObject *sha256)
{
    int rc = -1;
    PyObject *children = action_slot(a, S_CHILDREN, s_children);
    PyObject *own = NULL, *key = NULL, *found = NULL;
    if (children == NULL)
        return -1;
    if ((own = action_slot(a, S_DIGEST, s_digest)) == NULL)
        goto done;
    int has_children = PyObject_IsTrue(children);
    if (has_children < 0)
        goto done;
    if (!has_children) {
        found = PyDict_GetItemWithError(leaves, own);
        if (found != NULL)
            Py_INCREF(found);
        else if (PyErr_Occurred() ||
                 (found = subtree_hash(sha256, leaf_digest, own, &own, 1)) == NULL ||
                 PyDict_SetItem(leaves, own, found) < 0)
            goto done;
        rc = set_action_slot(a, S_SUBTREE_DIGEST, s_subtree_digest, found);
        goto done;
    }
    PyObject *seq = PySequence_Fast(children, "children must be a sequence");
    if (seq == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    key = PyTuple_New(n + 1);
    if (key == NULL) {
        Py_DECREF(seq);
        goto done;
    }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(own));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *digest =
            action_slot(PySequence_Fast_ITEMS(seq)[i], S_SUBTREE_DIGEST, s_subtree_digest);
        if (digest == NULL) {
            Py_DECREF(seq);
            goto done;
        }
        PyTuple_SET_ITEM(key, i + 1, digest);
    }
    Py_DECREF(seq);
    found = PyDict_GetItemWithError(inner, key);
    if (found != NULL)
        Py_INCREF(found);
    else if (PyErr_Occurred() ||
             (found = subtree_hash(sha256, inner_digest, key, &PyTuple_GET_ITEM(key, 0),
                                   n + 1)) == NULL ||
             PyDict_SetItem(inner, key, found) < 0)
        goto done;
    if (set_action_slot(a, S_SUBTREE_DIGEST, s_subtree_digest, found) < 0)
        goto done;
    if (fold != Py_None && n >= 2) {
        int equal = has_equal(key);
        if (equal < 0)
            goto done;
        if (equal) {
            PyObject *folded = PyObject_CallOneArg(fold, children);
            if (folded == NULL)
                goto done;
            int failed = set_action_slot(a, S_CHILDREN, s_children, folded);
            Py_DECREF(folded);
            if (failed < 0)
                goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(children);
    Py_XDECREF(own);
    Py_XDECREF(key);
    Py_XDECREF(found);
    return rc;
}

PyObject *
tt_subtree_digests(PyObject *self, PyObject *args)
{
    PyObject *order, *leaves, *inner, *leaf_digest, *inner_digest, *fold, *type, *sha256 = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOO|O:subtree_digests", &PyList_Type, &order,
                          &PyDict_Type, &leaves, &PyDict_Type, &inner, &leaf_digest,
                          &inner_digest, &fold, &type, &sha256))
        return NULL;
    if (sha256 == Py_None)
        sha256 = NULL;
    if (intern_names() < 0)
        return NULL;
    if (s_subtree_digest == NULL) {
        if ((s_digest = PyUnicode_InternFromString("digest")) == NULL ||
            (s_subtree_digest = PyUnicode_InternFromString("subtree_digest")) == NULL)
            return NULL;
    }
    if (learn_action_type(type) < 0) /* (declined: every slot read and set by name) */
        return NULL;
    for (Py_ssize_t i = PyList_GET_SIZE(order); i-- > 0;) {
        if (i >= PyList_GET_SIZE(order)) /* (`fold` may not shrink it: it does not) */
            continue;
        PyObject *a = Py_NewRef(PyList_GET_ITEM(order, i));
        int rc = subtree_of(a, leaves, inner, leaf_digest, inner_digest, fold, sha256);
        Py_DECREF(a);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ PlantUML lines */

/* `stack.append((child, depth + 1, in_loop))` for `children` in reverse (the walk pops them in
 * order); -1 with an exception set on failure. */
static int
push_children(PyObject *stack, PyObject *children, PyObject *depth, PyObject *in_loop)
{
    Py_ssize_t n = PyList_GET_SIZE(children);
    if (n == 0)
        return 0;
    PyObject *one = PyLong_FromLong(1);
    PyObject *deeper = one == NULL ? NULL : PyNumber_Add(depth, one);
    Py_XDECREF(one);
    if (deeper == NULL)
        return -1;
    for (Py_ssize_t i = n; i-- > 0 && i < PyList_GET_SIZE(children);) {
        PyObject *pushed = PyTuple_Pack(3, PyList_GET_ITEM(children, i), deeper, in_loop);
        if (pushed == NULL || PyList_Append(stack, pushed) < 0) {
            Py_XDECREF(pushed);
            Py_DECREF(deeper);
            return -1;
        }
        Py_DECREF(pushed);
    }
    Py_DECREF(deeper);
    return 0;
}

/* uml_lines(stack, lines, memo, limit, Action) -> None: `tracetool.diagram.plantuml._batch_lines`'
 * loop for the items it makes of memoized texts only, until the stack is empty, `lines` holds
 * `limit` lines, or the next item needs Python (left on the stack): a closing line (a str) is
 * emitted; a plain function action (no diff marks) whose head lines (`_Texts.heads`), label
 * (`labels`), elapsed text (`elapsed`) and response line (`responses`) are all memoized
 * already, and whose name needs no note, emits its lines, pushes its closing lines and its
 * children; an elapsed time's text not memoized yet is `elapsed_text(elapsed)` (which memoizes it).
 * A query action (no diff marks) whose alias, label and note texts are memoized is written
 * likewise, so are an HTTP action (no diff marks, no note) whose head lines, label and result
 * label (`results`) are memoized and a loop without diff marks. An elapsed text not memoized
 * by value yet is found by its 3 digits in `shown` (as `elapsed_text` does) before calling it.
 * memo is (heads, labels, elapsed, elapsed_text, responses, markup, notes, note_limit,
 * indents, aliases, notes memo, results, shown). */

/* The memoized text after the label of an action that took `elapsed` seconds (new reference,
 * NULL with an exception set): `elapsed[elapsed]`, else, for a float, the text memoized by the
 * milliseconds' 3 digits (`shown[f"{elapsed * 1000:.3g}"]`, then memoized in `elapsed` as
 * `_Texts.elapsed_text` does), else `elapsed_text(elapsed)` (which formats and memoizes it). */
static PyObject *
uml_elapsed(PyObject *elapsed_texts, PyObject *shown_memo, PyObject *elapsed_text,
            PyObject *elapsed)
{
    PyObject *shown = PyDict_GetItemWithError(elapsed_texts, elapsed);
    if (shown != NULL)
        return Py_NewRef(shown);
    if (PyErr_Occurred())
        return NULL;
    if (PyFloat_CheckExact(elapsed)) {
        /* `format(x, ".3g")` is PyOS_double_to_string(x, 'g', 3, 0) */
        char *digits = PyOS_double_to_string(PyFloat_AS_DOUBLE(elapsed) * 1000.0, 'g', 3, 0,
                                             NULL);
        if (digits == NULL)
            return NULL;
        PyObject *key = PyUnicode_FromString(digits);
        PyMem_Free(digits);
        if (key == NULL)
            return NULL;
        shown = PyDict_GetItemWithError(shown_memo, key);
        Py_DECREF(key);
        if (shown != NULL) {
            Py_INCREF(shown);
            if (PyDict_SetItem(elapsed_texts, elapsed, shown) < 0)
                Py_CLEAR(shown);
            return shown;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_CallOneArg(elapsed_text, elapsed);
}

static int
uml_function(PyObject *stack, PyObject *lines, PyObject *item, PyObject *heads, PyObject *labels,
             PyObject *elapsed_texts, PyObject *shown_memo, PyObject *elapsed_text,
             PyObject *responses, int markup, int notes, Py_ssize_t note_limit)
{
    /* 1: done, 0: needs Python (nothing emitted), -1: error */
    PyObject *action = PyTuple_GET_ITEM(item, 0), *depth = PyTuple_GET_ITEM(item, 1);
    PyObject *in_loop = PyTuple_GET_ITEM(item, 2);
    if (Py_TYPE(action) != action_type)
        return 0;
    PyObject *node_type = SLOT(action, S_NODE_TYPE), *caller = SLOT(action, S_CALLER);
    PyObject *callee = SLOT(action, S_CALLEE), *name = SLOT(action, S_NAME);
    PyObject *is_static = SLOT(action, S_STATIC), *elapsed = SLOT(action, S_ELAPSED);
    PyObject *rv = SLOT(action, S_RETURN_VALUE), *children = SLOT(action, S_CHILDREN);
    if (node_type == NULL || caller == NULL || callee == NULL || name == NULL ||
        is_static == NULL || elapsed == NULL || rv == NULL || children == NULL ||
        SLOT(action, S_DIFF_MODE) != Py_None || SLOT(action, S_FORMER_NAME) != Py_None ||
        SLOT(action, S_FORMER_RESULT) != Py_None || !PyLong_CheckExact(node_type) ||
        !PyList_CheckExact(children))
        return 0;
    int overflow;
    if (PyLong_AsLongAndOverflow(node_type, &overflow) != 3 || overflow)
        return 0;
    int rc = -1;
    PyObject *key = NULL, *head_key = NULL, *label = NULL, *text = NULL, *rv_id = NULL;
    PyObject *caller_id = PyLong_FromVoidPtr(caller), *callee_id = PyLong_FromVoidPtr(callee);
    if (caller_id == NULL || callee_id == NULL)
        goto done;
    head_key = PyTuple_Pack(3, depth, caller_id, callee_id);
    if (head_key == NULL)
        goto done;
    PyObject *lines_of = PyDict_GetItemWithError(heads, head_key);
    if (lines_of == NULL || !PyTuple_CheckExact(lines_of) || PyTuple_GET_SIZE(lines_of) != 4) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    PyObject *shown_name = name;
    int truth = PyObject_IsTrue(name);
    if (truth < 0)
        goto done;
    if (!truth)
        shown_name = empty_str; /* `action.name or ""` */
    if (!PyUnicode_Check(shown_name)) {
        rc = 0;
        goto done;
    }
    if (notes && PyUnicode_GET_LENGTH(shown_name) > note_limit) {
        rc = 0; /* (a note: Python writes it) */
        goto done;
    }
    int underline = PyObject_IsTrue(is_static);
    if (underline < 0)
        goto done;
    key = PyTuple_Pack(2, shown_name, underline && markup ? Py_True : Py_False);
    if (key == NULL)
        goto done;
    PyObject *memo_label = PyDict_GetItemWithError(labels, key); /* (borrowed) */
    if (memo_label == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    int has_elapsed = PyObject_IsTrue(elapsed);
    if (has_elapsed < 0)
        goto done;
    PyObject *response_line = NULL;
    if (rv != Py_None) {
        if ((rv_id = PyLong_FromVoidPtr(rv)) == NULL)
            goto done;
        PyObject *found = PyDict_GetItemWithError(responses, rv_id);
        if (found == NULL && PyErr_Occurred())
            goto done;
        if (found != NULL && PyTuple_CheckExact(found) && PyTuple_GET_SIZE(found) == 3 &&
            PyTuple_GET_ITEM(found, 0) == rv && PyDict_CheckExact(PyTuple_GET_ITEM(found, 2))) {
            response_line = PyDict_GetItemWithError(PyTuple_GET_ITEM(found, 2),
                                                    PyTuple_GET_ITEM(lines_of, 3));
            if (response_line == NULL && PyErr_Occurred())
                goto done;
        }
        if (response_line == NULL) {
            rc = 0;
            goto done;
        }
    }
    /* everything is memoized: the lines */
    PyObject *head = PyTuple_GET_ITEM(lines_of, 0), *activation = PyTuple_GET_ITEM(lines_of, 1);
    label = Py_NewRef(memo_label);
    if (has_elapsed) { /* its text memoized, or made (and memoized) by `elapsed_text` */
        PyObject *shown = uml_elapsed(elapsed_texts, shown_memo, elapsed_text, elapsed);
        if (shown == NULL)
            goto done;
        PyObject *joined = PyUnicode_Concat(label, shown);
        Py_DECREF(shown);
        Py_SETREF(label, joined);
        if (label == NULL)
            goto done;
    }
    if ((text = PyUnicode_Concat(head, label)) == NULL || PyList_Append(lines, text) < 0)
        goto done;
    if (rv != Py_None) {
        int active = PyObject_IsTrue(activation);
        if (active < 0)
            goto done;
        if (active && (PyList_Append(lines, activation) < 0 ||
                       PyList_Append(stack, PyTuple_GET_ITEM(lines_of, 2)) < 0))
            goto done;
        if (PyList_Append(stack, response_line) < 0)
            goto done;
    }
    if (push_children(stack, children, depth, in_loop) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(caller_id);
    Py_XDECREF(callee_id);
    Py_XDECREF(head_key);
    Py_XDECREF(key);
    Py_XDECREF(label);
    Py_XDECREF(text);
    Py_XDECREF(rv_id);
    return rc;
}

static PyObject *s_name, *s_note_right, *s_end_note, *s_colon, *s_arrow_both, *s_arrow_out,
    *s_arrow_in;

/* A query action without diff marks whose alias, label and note texts are memoized (the
 * general branch of `_batch_lines` for it): 1 done, 0 needs Python (nothing emitted), -1. */
static int
uml_query(PyObject *stack, PyObject *lines, PyObject *item, PyObject *labels,
          PyObject *elapsed_texts, PyObject *shown_memo, PyObject *elapsed_text, int notes,
          Py_ssize_t note_limit,
          PyObject *indents, PyObject *aliases, PyObject *notes_memo)
{
    PyObject *action = PyTuple_GET_ITEM(item, 0), *depth = PyTuple_GET_ITEM(item, 1);
    PyObject *in_loop = PyTuple_GET_ITEM(item, 2);
    PyObject *caller = SLOT(action, S_CALLER), *callee = SLOT(action, S_CALLEE);
    PyObject *query = SLOT(action, S_QUERY), *elapsed = SLOT(action, S_ELAPSED);
    PyObject *children = SLOT(action, S_CHILDREN);
    if (caller == NULL || callee == NULL || query == NULL || elapsed == NULL ||
        children == NULL || SLOT(action, S_DIFF_MODE) != Py_None ||
        SLOT(action, S_FORMER_NAME) != Py_None || !PyList_CheckExact(children) ||
        !PyLong_CheckExact(depth))
        return 0;
    Py_ssize_t level = PyLong_AsSsize_t(depth);
    if (level == -1 && PyErr_Occurred())
        return -1;
    if (level < 0 || PyList_GET_SIZE(indents) <= level + 1)
        return 0; /* (Python grows `indents`) */
    int rc = -1;
    PyObject *name = NULL, *alias0 = NULL, *alias1 = NULL, *key = NULL, *label = NULL,
             *text = NULL;
    int truth = PyObject_IsTrue(query);
    if (truth < 0)
        return -1;
    name = Py_NewRef(truth ? query : empty_str); /* `display_name` */
    if (!PyUnicode_Check(name)) {
        rc = 0;
        goto done;
    }
    int has_caller = PyObject_IsTrue(caller), has_callee = PyObject_IsTrue(callee);
    if (has_caller < 0 || has_callee < 0)
        goto done;
    PyObject *ends[2] = {caller, callee};
    PyObject **aliased[2] = {&alias0, &alias1};
    int present[2] = {has_caller, has_callee};
    for (int i = 0; i < 2; i++) {
        if (!present[i]) {
            *aliased[i] = Py_NewRef(empty_str);
            continue;
        }
        PyObject *actor_name = PyObject_GetAttr(ends[i], s_name);
        if (actor_name == NULL)
            goto done;
        PyObject *found = PyDict_GetItemWithError(aliases, actor_name);
        Py_DECREF(actor_name);
        if (found == NULL) {
            rc = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        *aliased[i] = Py_NewRef(found);
    }
    if ((key = PyTuple_Pack(2, name, Py_False)) == NULL)
        goto done;
    PyObject *memo_label = PyDict_GetItemWithError(labels, key);
    if (memo_label == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    PyObject *note = NULL;
    int with_note = notes && PyUnicode_GET_LENGTH(name) > note_limit;
    if (with_note) {
        note = PyDict_GetItemWithError(notes_memo, name);
        if (note == NULL) {
            rc = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
    }
    int has_elapsed = PyObject_IsTrue(elapsed);
    if (has_elapsed < 0)
        goto done;
    label = Py_NewRef(memo_label);
    if (has_elapsed) {
        PyObject *shown = uml_elapsed(elapsed_texts, shown_memo, elapsed_text, elapsed);
        if (shown == NULL)
            goto done;
        PyObject *joined = PyUnicode_Concat(label, shown);
        Py_DECREF(shown);
        Py_SETREF(label, joined);
        if (label == NULL)
            goto done;
    }
    PyObject *indent = PyList_GET_ITEM(indents, level);
    PyObject *arrow = has_caller && has_callee ? s_arrow_both : has_caller ? s_arrow_out : s_arrow_in;
    PyObject *parts[6] = {indent, alias0, arrow, alias1, s_colon, label};
    PyObject *joined_parts = PyTuple_New(6);
    if (joined_parts == NULL)
        goto done;
    for (int i = 0; i < 6; i++)
        PyTuple_SET_ITEM(joined_parts, i, Py_NewRef(parts[i]));
    text = PyUnicode_Join(empty_str, joined_parts);
    Py_DECREF(joined_parts);
    if (text == NULL || PyList_Append(lines, text) < 0)
        goto done;
    if (with_note) {
        PyObject *open = PyUnicode_Concat(indent, s_note_right);
        PyObject *close = open == NULL ? NULL : PyUnicode_Concat(indent, s_end_note);
        int failed = close == NULL || PyList_Append(lines, open) < 0 ||
                     PyList_Append(lines, note) < 0 || PyList_Append(lines, close) < 0;
        Py_XDECREF(open);
        Py_XDECREF(close);
        if (failed)
            goto done;
    }
    if (push_children(stack, children, depth, in_loop) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(name);
    Py_XDECREF(alias0);
    Py_XDECREF(alias1);
    Py_XDECREF(key);
    Py_XDECREF(label);
    Py_XDECREF(text);
    return rc;
}

static PyObject *s_end;

/* A server (kind 4) or client (5) HTTP action without diff marks whose head lines (`heads`),
 * label, result label and elapsed text are memoized and whose route needs no note (the plain
 * HTTP branch of `_batch_lines`): 1 done, 0 needs Python (nothing emitted), -1 error. */
static int
uml_rpc(PyObject *stack, PyObject *lines, PyObject *item, long kind, PyObject *heads,
        PyObject *labels, PyObject *elapsed_texts, PyObject *shown_memo, PyObject *elapsed_text,
        PyObject *results, int markup, int notes, Py_ssize_t note_limit)
{
    PyObject *action = PyTuple_GET_ITEM(item, 0), *depth = PyTuple_GET_ITEM(item, 1);
    PyObject *in_loop = PyTuple_GET_ITEM(item, 2);
    PyObject *caller = SLOT(action, S_CALLER), *callee = SLOT(action, S_CALLEE);
    PyObject *route = SLOT(action, S_ROUTE), *status = SLOT(action, S_STATUS);
    PyObject *elapsed = SLOT(action, S_ELAPSED), *children = SLOT(action, S_CHILDREN);
    if (caller == NULL || callee == NULL || route == NULL || status == NULL || elapsed == NULL ||
        children == NULL || SLOT(action, S_DIFF_MODE) != Py_None ||
        SLOT(action, S_FORMER_NAME) != Py_None || SLOT(action, S_FORMER_RESULT) != Py_None ||
        !PyList_CheckExact(children) || (status != Py_None && !PyLong_CheckExact(status)))
        return 0;
    if (kind == 4 /* SERVER_RPC: no caller */)
        caller = Py_None;
    int truth = PyObject_IsTrue(route);
    if (truth < 0)
        return -1;
    PyObject *name = truth ? route : empty_str; /* `display_name` */
    if (!PyUnicode_Check(name) || (notes && PyUnicode_GET_LENGTH(name) > note_limit))
        return 0; /* (a note: Python writes it) */
    int rc = -1;
    PyObject *caller_id = NULL, *callee_id = NULL, *key = NULL, *lines_of = NULL, *label = NULL,
             *result = NULL, *text = NULL;
    if ((caller_id = PyLong_FromVoidPtr(caller)) == NULL ||
        (callee_id = PyLong_FromVoidPtr(callee)) == NULL ||
        (key = PyTuple_Pack(3, depth, caller_id, callee_id)) == NULL)
        goto done;
    lines_of = PyDict_GetItemWithError(heads, key);
    if (lines_of == NULL || !PyTuple_CheckExact(lines_of) || PyTuple_GET_SIZE(lines_of) != 4) {
        lines_of = NULL;
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(lines_of);
    Py_SETREF(key, PyTuple_Pack(2, name, Py_False));
    if (key == NULL)
        goto done;
    label = PyDict_GetItemWithError(labels, key);
    if (label == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(label);
    if (status != Py_None) { /* `_Texts.response_label`: str(status), in italics from 400 */
        int overflow;
        long code = PyLong_AsLongAndOverflow(status, &overflow);
        if (code == -1 && PyErr_Occurred())
            goto done;
        if (overflow) {
            rc = 0;
            goto done;
        }
        PyObject *shown_status = PyObject_Str(status);
        if (shown_status == NULL)
            goto done;
        Py_SETREF(key, PyTuple_Pack(2, shown_status, code >= 400 && markup ? Py_True : Py_False));
        Py_DECREF(shown_status);
        if (key == NULL)
            goto done;
        result = PyDict_GetItemWithError(results, key);
        if (result == NULL) {
            rc = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        Py_INCREF(result);
    }
    int has_elapsed = PyObject_IsTrue(elapsed);
    if (has_elapsed < 0)
        goto done;
    if (has_elapsed) {
        PyObject *shown = uml_elapsed(elapsed_texts, shown_memo, elapsed_text, elapsed);
        if (shown == NULL)
            goto done;
        PyObject *joined = PyUnicode_Concat(label, shown);
        Py_DECREF(shown);
        Py_SETREF(label, joined);
        if (label == NULL)
            goto done;
    }
    /* everything is memoized: the lines */
    PyObject *activation = PyTuple_GET_ITEM(lines_of, 1);
    if ((text = PyUnicode_Concat(PyTuple_GET_ITEM(lines_of, 0), label)) == NULL ||
        PyList_Append(lines, text) < 0)
        goto done;
    int active = PyObject_IsTrue(activation);
    if (active < 0)
        goto done;
    if (active && (PyList_Append(lines, activation) < 0 ||
                   PyList_Append(stack, PyTuple_GET_ITEM(lines_of, 2)) < 0))
        goto done;
    PyObject *response = PyTuple_GET_ITEM(lines_of, 3);
    int with_result = result == NULL ? 0 : PyObject_IsTrue(result);
    if (with_result < 0)
        goto done;
    if (with_result)
        Py_SETREF(text, PyUnicode_FromFormat("%S: %S", response, result));
    else
        Py_SETREF(text, Py_NewRef(response));
    if (text == NULL || PyList_Append(stack, text) < 0 ||
        push_children(stack, children, depth, in_loop) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(caller_id);
    Py_XDECREF(callee_id);
    Py_XDECREF(key);
    Py_XDECREF(lines_of);
    Py_XDECREF(label);
    Py_XDECREF(result);
    Py_XDECREF(text);
    return rc;
}

/* A loop without diff marks (`Loop N times`, `~N` inside another loop, then its elapsed text;
 * `End` after its children): 1 done, 0 needs Python (nothing emitted), -1 error. */
static int
uml_loop(PyObject *stack, PyObject *lines, PyObject *item, PyObject *elapsed_texts,
         PyObject *shown_memo, PyObject *elapsed_text, PyObject *indents)
{
    PyObject *action = PyTuple_GET_ITEM(item, 0), *depth = PyTuple_GET_ITEM(item, 1);
    PyObject *in_loop = PyTuple_GET_ITEM(item, 2);
    PyObject *count = SLOT(action, S_COUNT), *elapsed = SLOT(action, S_ELAPSED);
    PyObject *children = SLOT(action, S_CHILDREN);
    if (count == NULL || elapsed == NULL || children == NULL ||
        SLOT(action, S_DIFF_MODE) != Py_None || !PyLong_CheckExact(count) ||
        !PyList_CheckExact(children) || !PyLong_CheckExact(depth))
        return 0;
    Py_ssize_t level = PyLong_AsSsize_t(depth);
    if (level == -1 && PyErr_Occurred())
        return -1;
    if (level < 0 || PyList_GET_SIZE(indents) <= level + 1)
        return 0; /* (Python grows `indents`) */
    PyObject *indent = PyList_GET_ITEM(indents, level);
    if (!PyUnicode_CheckExact(indent))
        return 0;
    int nested = PyObject_IsTrue(in_loop), has_elapsed = PyObject_IsTrue(elapsed);
    if (nested < 0 || has_elapsed < 0)
        return -1;
    Py_INCREF(indent);
    int rc = -1;
    PyObject *shown = NULL, *text = NULL, *end = NULL;
    if (has_elapsed &&
        (shown = uml_elapsed(elapsed_texts, shown_memo, elapsed_text, elapsed)) == NULL)
        goto done;
    text = PyUnicode_FromFormat("%SLoop %s%S times%S", indent, nested ? "~" : "", count,
                                shown != NULL ? shown : empty_str);
    if (text == NULL || PyList_Append(lines, text) < 0 ||
        (end = PyUnicode_Concat(indent, s_end)) == NULL || PyList_Append(stack, end) < 0 ||
        push_children(stack, children, depth, Py_True) < 0)
        goto done;
    rc = 1;
done:
    Py_DECREF(indent);
    Py_XDECREF(shown);
    Py_XDECREF(text);
    Py_XDECREF(end);
    return rc;
}

PyObject *
tt_uml_lines(PyObject *self, PyObject *args)
{
    PyObject *stack, *lines, *memo, *type;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!O!O!nO:uml_lines", &PyList_Type, &stack, &PyList_Type, &lines,
                          &PyTuple_Type, &memo, &limit, &type))
        return NULL;
    PyObject *heads, *labels, *elapsed_texts, *elapsed_text, *responses, *indents, *aliases,
        *notes_memo, *results, *shown_memo;
    int markup, notes;
    Py_ssize_t note_limit;
    if (!PyArg_ParseTuple(memo, "O!O!O!OO!ppnO!O!O!O!O!:uml_lines memo", &PyDict_Type, &heads,
                          &PyDict_Type, &labels, &PyDict_Type, &elapsed_texts, &elapsed_text,
                          &PyDict_Type, &responses, &markup, &notes, &note_limit, &PyList_Type,
                          &indents, &PyDict_Type, &aliases, &PyDict_Type, &notes_memo,
                          &PyDict_Type, &results, &PyDict_Type, &shown_memo))
        return NULL;
    if (intern_names() < 0)
        return NULL;
    if (s_end == NULL) {
        if ((s_name = PyUnicode_InternFromString("name")) == NULL ||
            (s_note_right = PyUnicode_InternFromString("Note right")) == NULL ||
            (s_end_note = PyUnicode_InternFromString("End note")) == NULL ||
            (s_colon = PyUnicode_InternFromString(": ")) == NULL ||
            (s_arrow_both = PyUnicode_InternFromString("->")) == NULL ||
            (s_arrow_out = PyUnicode_InternFromString("->]")) == NULL ||
            (s_arrow_in = PyUnicode_InternFromString("[->")) == NULL ||
            (s_end = PyUnicode_InternFromString("End")) == NULL)
            return NULL;
    }
    int learned = learn_action_type(type);
    if (learned < 0)
        return NULL;
    if (learned > 0)
        Py_RETURN_NONE; /* (every item left to Python) */
    while (PyList_GET_SIZE(stack) && PyList_GET_SIZE(lines) < limit) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *item = Py_NewRef(PyList_GET_ITEM(stack, top));
        int rc;
        if (PyUnicode_Check(item)) {
            rc = PyList_SetSlice(stack, top, top + 1, NULL);
            if (rc == 0)
                rc = PyList_Append(lines, item) < 0 ? -1 : 1;
        }
        else if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 3) {
            rc = PyList_SetSlice(stack, top, top + 1, NULL);
            if (rc == 0) {
                PyObject *action = PyTuple_GET_ITEM(item, 0);
                PyObject *kind = Py_TYPE(action) == action_type ? SLOT(action, S_NODE_TYPE) : NULL;
                int overflow = 0;
                long type = kind != NULL && PyLong_CheckExact(kind)
                                ? PyLong_AsLongAndOverflow(kind, &overflow)
                                : 0;
                if (overflow)
                    type = 0;
                if (type == 6 /* QUERY */)
                    rc = uml_query(stack, lines, item, labels, elapsed_texts, shown_memo,
                                   elapsed_text, notes, note_limit, indents, aliases, notes_memo);
                else if (type == 4 || type == 5 /* SERVER_RPC, CLIENT_RPC */)
                    rc = uml_rpc(stack, lines, item, type, heads, labels, elapsed_texts,
                                 shown_memo, elapsed_text, results, markup, notes, note_limit);
                else if (type == 1 /* LOOP */)
                    rc = uml_loop(stack, lines, item, elapsed_texts, shown_memo, elapsed_text,
                                  indents);
                else
                    rc = uml_function(stack, lines, item, heads, labels, elapsed_texts,
                                      shown_memo, elapsed_text, responses, markup, notes,
                                      note_limit);
                if (rc == 0 && PyList_Append(stack, item) < 0) /* (back, for Python) */
                    rc = -1;
            }
        }
        else
            rc = 0;
        Py_DECREF(item);
        if (rc < 0)
            return NULL;
        if (rc == 0)
            break;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ pre-order */

/* preorder_calls(roots, CallNode) -> (nodes, calls): `tracetool.trace.tree.preorder(roots)` and
 * the call event of each node (`[n.call for n in nodes]`), in one walk. */
PyObject *
tt_preorder_calls(PyObject *self, PyObject *args)
{
    PyObject *roots, *type;
    if (!PyArg_ParseTuple(args, "O!O:preorder_calls", &PyList_Type, &roots, &type))
        return NULL;
    if (intern_names() < 0 || intern_tree_names() < 0 || learn_node_type(type) < 0)
        return NULL;
    PyObject *nodes = PyList_New(0), *calls = PyList_New(0);
    Stack stack = {NULL, 0, 0};
    if (nodes == NULL || calls == NULL)
        goto error;
    for (Py_ssize_t i = PyList_GET_SIZE(roots); i-- > 0;)
        if (push(&stack, PyList_GET_ITEM(roots, i), NULL) < 0)
            goto error;
    while (stack.size) {
        PyObject *node = stack.items[--stack.size].node; /* (our reference) */
        PyObject *call = node_get(node, N_CALL, s_call);
        PyObject *children = call == NULL ? NULL : node_get(node, N_CHILDREN, s_children);
        int failed = children == NULL || PyList_Append(nodes, node) < 0 ||
                     PyList_Append(calls, call) < 0 || push_all(&stack, children, NULL) < 0;
        Py_DECREF(node);
        Py_XDECREF(call);
        Py_XDECREF(children);
        if (failed)
            goto error;
    }
    free(stack.items);
    PyObject *out = PyTuple_Pack(2, nodes, calls);
    Py_DECREF(nodes);
    Py_DECREF(calls);
    return out;
error:
    clear_stack(&stack);
    Py_XDECREF(nodes);
    Py_XDECREF(calls);
    return NULL;
}

/* ------------------------------------------------------------------ digests without actions */

/* diagram_digests(call_roots, cos, kept, context, leaves, inner, leaf_digest, inner_digest)
 *   -> the root actions' subtree digests
 *
 * What `diagram_actions(..., digests_only=True, ...)` and then `subtree_digests` over its
 * actions (no folding) give, `[a.subtree_digest for a in roots]`, with no action made: each
 * call's digest is read as `diagram_actions` makes its bare action (a str here, or the
 * `digest` of the action a Python helper makes), and each made call's subtree digest is made
 * once its children's are, as `subtree_digests` makes it (the same `leaves` and `inner` maps
 * and helpers). A call without a lifeline passes its children's subtree digests up to the
 * nearest call with one, in their order, as its children's actions hang from that one's.
 *
 * The walk's stack holds calls to visit, (node, frame), and frames to finish, (frame, its
 * parent frame): a frame is a list [digest, child subtree digests...], which is then the key
 * into `inner` as a tuple; NULL as a parent frame is the roots. NotImplemented when the
 * context's Action class is not one `diagram_actions` knows. */

/* The subtree digest of a finished frame (new ref): `subtree_of` on its list. */
static PyObject *
frame_digest(PyObject *frame, PyObject *leaves, PyObject *inner, PyObject *leaf_digest,
             PyObject *inner_digest)
{
    PyObject *own = PyList_GET_ITEM(frame, 0), *found;
    if (PyList_GET_SIZE(frame) == 1) {
        found = PyDict_GetItemWithError(leaves, own);
        if (found != NULL)
            return Py_NewRef(found);
        if (PyErr_Occurred() || (found = PyObject_CallOneArg(leaf_digest, own)) == NULL)
            return NULL;
        if (PyDict_SetItem(leaves, own, found) < 0)
            Py_CLEAR(found);
        return found;
    }
    PyObject *key = PyList_AsTuple(frame);
    if (key == NULL)
        return NULL;
    found = PyDict_GetItemWithError(inner, key);
    if (found != NULL)
        Py_INCREF(found);
    else if (!PyErr_Occurred() && (found = PyObject_CallOneArg(inner_digest, key)) != NULL &&
             PyDict_SetItem(inner, key, found) < 0)
        Py_CLEAR(found);
    Py_DECREF(key);
    return found;
}

/* `push_all` of a node's children, none of which may be a list (a frame, on this stack). */
static int
push_nodes(Stack *stack, PyObject *children, PyObject *frame)
{
    PyObject *seq = PySequence_Fast(children, "children must be a sequence");
    if (seq == NULL)
        return -1;
    PyObject **kids = PySequence_Fast_ITEMS(seq);
    int rc = 0;
    for (Py_ssize_t i = PySequence_Fast_GET_SIZE(seq); i-- > 0 && rc == 0;) {
        if (PyList_CheckExact(kids[i])) {
            PyErr_SetString(PyExc_TypeError, "diagram_digests: a call node is a list");
            rc = -1;
        }
        else
            rc = push(stack, kids[i], frame);
    }
    Py_DECREF(seq);
    return rc;
}

PyObject *
tt_diagram_digests(PyObject *self, PyObject *args)
{
    PyObject *call_roots, *cos, *kept, *context, *leaves, *inner, *leaf_digest, *inner_digest;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!O!OO:diagram_digests", &PyList_Type, &call_roots,
                          &PyDict_Type, &cos, &kept, &PyTuple_Type, &context, &PyDict_Type,
                          &leaves, &PyDict_Type, &inner, &leaf_digest, &inner_digest))
        return NULL;
    if (intern_names() < 0)
        return NULL;
    if (s_subtree_digest == NULL) {
        if ((s_digest = PyUnicode_InternFromString("digest")) == NULL ||
            (s_subtree_digest = PyUnicode_InternFromString("subtree_digest")) == NULL)
            return NULL;
    }
    Context c;
    PyObject *type;
    if (read_context(context, Py_True, &c, &type) < 0)
        return NULL;
    int learned = learn_action_type(type);
    if (learned < 0)
        return NULL;
    if (learned > 0)
        Py_RETURN_NOTIMPLEMENTED;
    c.want_digest = 1;

    PyObject *roots = PyList_New(0);
    if (roots == NULL)
        return NULL;
    Stack stack = {NULL, 0, 0};
    if (push_nodes(&stack, call_roots, NULL) < 0)
        goto error;
    while (stack.size) {
        Item item = stack.items[--stack.size]; /* (its references are ours now) */
        PyObject *target = item.parent == NULL ? roots : item.parent;
        if (PyList_CheckExact(item.node)) { /* a frame whose children are all done */
            PyObject *digest = frame_digest(item.node, leaves, inner, leaf_digest, inner_digest);
            int failed = digest == NULL || PyList_Append(target, digest) < 0;
            Py_XDECREF(digest);
            Py_DECREF(item.node);
            Py_XDECREF(item.parent);
            if (failed)
                goto error;
            continue;
        }
        int made;
        PyObject *action = action_of(&c, item.node, NULL, cos, kept, &made);
        PyObject *frame = NULL, *children = NULL;
        int failed = action == NULL;
        if (!failed && made) {
            /* (a str; or the action a Python helper made: its digest) */
            PyObject *own = PyUnicode_Check(action) ? Py_NewRef(action)
                                                    : action_slot(action, S_DIGEST, s_digest);
            frame = own == NULL ? NULL : PyList_New(1);
            if (frame == NULL) {
                Py_XDECREF(own);
                failed = 1;
            }
            else {
                PyList_SET_ITEM(frame, 0, own);
                failed = push(&stack, frame, item.parent) < 0;
            }
        }
        Py_XDECREF(action);
        if (!failed)
            failed = (children = node_get(item.node, N_CHILDREN, s_children)) == NULL;
        if (!failed) /* (a call left out: its children's digests go up to its own frame's) */
            failed = push_nodes(&stack, children, made ? frame : item.parent) < 0;
        Py_XDECREF(children);
        Py_XDECREF(frame);
        Py_DECREF(item.node);
        Py_XDECREF(item.parent);
        if (failed)
            goto error;
    }
    free(stack.items);
    return roots;
error:
    clear_stack(&stack);
    Py_DECREF(roots);
    return NULL;
}

/* ------------------------------------------------------------------ binding event heads */

/* The fields `bind_heads` reads, by the offsets of the member descriptors of the calls' class
 * (learned for the last class met; a field that is not a plain object slot, or a slot left
 * empty, is read by attribute, which raises what Python raises). */
enum { H_SQL, H_METHOD, H_SERVER, H_CLIENT, H_PATH, H_LINENO, H_CLASS, H_STATIC, H_COUNT };
static const char *const head_field_names[H_COUNT] = {
    "sql_query", "method_id", "http_server_request", "http_client_request",
    "path",      "lineno",    "defined_class",       "static",
};
static PyObject *head_names[H_COUNT];

/* `head_names`, interned once (also `tree_facts`' names of event fields) */
static int
intern_head_names(void)
{
    for (int f = 0; f < H_COUNT; f++)
        if (head_names[f] == NULL &&
            (head_names[f] = PyUnicode_InternFromString(head_field_names[f])) == NULL)
            return -1;
    return 0;
}

typedef struct {
    PyTypeObject *type;         /* (borrowed; kept alive by the calls list while we run) */
    Py_ssize_t offsets[H_COUNT]; /* -1: read by attribute */
} HeadLayout;

static int
learn_head_layout(HeadLayout *layout, PyTypeObject *type)
{
    layout->type = type;
    for (int f = 0; f < H_COUNT; f++) {
        PyObject *descr = _PyType_Lookup(type, head_names[f]); /* (borrowed) */
        layout->offsets[f] = -1;
        if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
            if ((def->type == T_OBJECT_EX || def->type == T_OBJECT) &&
                !(def->flags & READ_RESTRICTED))
                layout->offsets[f] = def->offset;
        }
    }
    return 0;
}

/* call.<field>, a new reference (NULL with an exception set) */
static PyObject *
head_field(const HeadLayout *layout, PyObject *call, int f)
{
    Py_ssize_t offset = layout->offsets[f];
    if (offset >= 0) {
        PyObject *value = *(PyObject **)((char *)call + offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(call, head_names[f]);
}

/* The function cache's memo: what `functions` answered for a key of plain parts, found again
 * without the key's tuple. Every call's key is made of fresh strings (the decoder's), so the
 * dict hashes three of them (siphash, ~100 bytes) and compares them again on every call; the
 * memo hashes their bytes a word at a time and compares them with memcmp.
 *
 * Its entries agree with `functions` for good: a key is memoized only with the non-None code
 * object `functions` holds for it (or was just given for it), and `functions` never replaces
 * such an entry (every writer binds a key only when it reads None: apply.bind_calls,
 * _bind_minimal, _bind_heads). Plain parts are the ones whose equality is their bytes' or
 * their identity's: an exact str, None or UNSET (method, path, defined_class); an exact int
 * of a C long, None or UNSET (lineno); True, False, None or UNSET (static). Two keys of plain
 * parts are equal (as tuples) exactly when the memo finds them equal, so a hit answers what
 * the dict would; any other key (a float lineno, `1` for static...) goes to the dict only. */
typedef struct {
    uint64_t hash;                /* 0: an empty place */
    PyObject *method, *path, *cls; /* strong references: an exact str, None or UNSET */
    long lineno;
    int lineno_tag; /* 0 an int (lineno), 1 None, 2 UNSET */
    int flags;      /* static (0 False, 1 True, 2 None, 3 UNSET) | the key's last item << 2 */
    PyObject *co;   /* a strong reference */
} MemoEntry;

typedef struct {
    MemoEntry *entries;
    size_t mask; /* capacity - 1 (a power of two) */
    size_t used;
    PyObject *functions; /* the dict it agrees with (a strong reference): used with no other */
} Memo;

static const char *const memo_name = "tracetool.bind_heads.memo";

/* Releases a memo's entries and their table (not the memo itself) */
static void
memo_clear(Memo *m)
{
    if (m->entries == NULL)
        return;
    for (size_t i = 0; i <= m->mask; i++) {
        MemoEntry *e = &m->entries[i];
        if (e->hash) {
            Py_DECREF(e->method);
            Py_DECREF(e->path);
            Py_DECREF(e->cls);
            Py_DECREF(e->co);
        }
    }
    PyMem_Free(m->entries);
    m->entries = NULL;
}

static void
memo_destroy(PyObject *capsule)
{
    Memo *m = PyCapsule_GetPointer(capsule, memo_name);
    if (m == NULL)
        return;
    memo_clear(m);
    Py_XDECREF(m->functions);
    PyMem_Free(m);
}

/* The memo of `functions` kept in `holder[0]` (a list of one item: None, then the capsule made
 * here), or NULL with no error when there is none to use (holder not such a list, or its memo
 * another dict's). */
static Memo *
memo_of(PyObject *holder, PyObject *functions)
{
    if (holder == NULL || !PyList_CheckExact(holder) || PyList_GET_SIZE(holder) != 1)
        return NULL;
    PyObject *item = PyList_GET_ITEM(holder, 0);
    if (PyCapsule_IsValid(item, memo_name)) {
        Memo *found = PyCapsule_GetPointer(item, memo_name);
        return found != NULL && found->functions == functions ? found : NULL;
    }
    if (item != Py_None)
        return NULL;
    Memo *m = PyMem_Calloc(1, sizeof(Memo));
    MemoEntry *entries = PyMem_Calloc(64, sizeof(MemoEntry));
    if (m == NULL || entries == NULL) {
        PyMem_Free(m);
        PyMem_Free(entries);
        return NULL; /* (no memo: the dict alone) */
    }
    m->entries = entries;
    m->mask = 63;
    m->functions = Py_NewRef(functions);
    PyObject *capsule = PyCapsule_New(m, memo_name, memo_destroy);
    if (capsule == NULL) {
        PyErr_Clear();
        Py_DECREF(functions);
        PyMem_Free(entries);
        PyMem_Free(m);
        return NULL;
    }
    PyList_SET_ITEM(holder, 0, capsule); /* (steals it) */
    Py_DECREF(item);
    return m;
}

static inline uint64_t
memo_mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9E3779B97F4A7C15u;
    return h ^ (h >> 29);
}

/* Mixes a plain string part (exact str, None or UNSET) into `h`; 0 when it is not plain. */
static inline int
memo_hash_str(uint64_t *h, PyObject *s, PyObject *unset)
{
    if (s == Py_None || s == unset) {
        *h = memo_mix(*h, s == Py_None ? 0x6e6f6e65u : 0x756e7365u);
        return 1;
    }
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_READY(s))
        return 0;
    int kind = PyUnicode_KIND(s);
    size_t n = (size_t)PyUnicode_GET_LENGTH(s) * (size_t)kind;
    const unsigned char *p = PyUnicode_DATA(s);
    uint64_t acc = memo_mix(*h, ((uint64_t)kind << 56) ^ n);
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        acc = memo_mix(acc, w);
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        acc = memo_mix(acc, w ^ 0xA5);
    }
    *h = acc;
    return 1;
}

/* Whether two plain string parts are equal (as Python's == finds them) */
static inline int
memo_same_str(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b))
        return 0; /* (None or UNSET, not identical) */
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return n == PyUnicode_GET_LENGTH(b) && kind == PyUnicode_KIND(b) &&
           memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
}

/* A key's parts, read for the memo */
typedef struct {
    PyObject *method, *path, *cls; /* (borrowed) */
    long lineno;
    int lineno_tag, flags;
    uint64_t hash; /* 0: the key is not of plain parts (not memoized) */
} MemoKey;

static void
memo_key(MemoKey *k, PyObject *method, PyObject *path, PyObject *lineno, PyObject *cls,
         PyObject *is_static, int flag, PyObject *unset)
{
    k->hash = 0;
    k->method = method;
    k->path = path;
    k->cls = cls;
    if (lineno == Py_None || lineno == unset) {
        k->lineno = 0;
        k->lineno_tag = lineno == Py_None ? 1 : 2;
    }
    else if (PyLong_CheckExact(lineno)) {
        int overflow = 0;
        k->lineno = PyLong_AsLongAndOverflow(lineno, &overflow);
        if (overflow || (k->lineno == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return;
        }
        k->lineno_tag = 0;
    }
    else
        return;
    int st = is_static == Py_False  ? 0
             : is_static == Py_True ? 1
             : is_static == Py_None ? 2
             : is_static == unset   ? 3
                                    : -1;
    if (st < 0)
        return;
    k->flags = st | (flag ? 4 : 0);
    uint64_t h = memo_mix(0x243F6A8885A308D3u, ((uint64_t)k->flags << 2) | (uint64_t)k->lineno_tag);
    h = memo_mix(h, (uint64_t)k->lineno);
    if (!memo_hash_str(&h, method, unset) || !memo_hash_str(&h, path, unset) ||
        !memo_hash_str(&h, cls, unset))
        return;
    k->hash = h | 1; /* (never 0) */
}

/* The code object memoized for `k` (borrowed), or NULL */
static PyObject *
memo_find(const Memo *m, const MemoKey *k)
{
    for (size_t i = (size_t)(k->hash >> 7) & m->mask;; i = (i + 1) & m->mask) {
        const MemoEntry *e = &m->entries[i];
        if (e->hash == 0)
            return NULL;
        if (e->hash == k->hash && e->lineno == k->lineno && e->lineno_tag == k->lineno_tag &&
            e->flags == k->flags && memo_same_str(e->method, k->method) &&
            memo_same_str(e->path, k->path) && memo_same_str(e->cls, k->cls))
            return e->co;
    }
}

static void
memo_place(MemoEntry *entries, size_t mask, const MemoEntry *e)
{
    size_t i = (size_t)(e->hash >> 7) & mask;
    while (entries[i].hash != 0)
        i = (i + 1) & mask;
    entries[i] = *e;
}

/* Remembers `co` for `k` (not found in the memo); a memo that cannot grow stays as it is. */
static void
memo_add(Memo *m, const MemoKey *k, PyObject *co)
{
    if ((m->used + 1) * 2 > m->mask + 1) {
        size_t capacity = (m->mask + 1) * 2;
        MemoEntry *entries = PyMem_Calloc(capacity, sizeof(MemoEntry));
        if (entries == NULL)
            return;
        for (size_t i = 0; i <= m->mask; i++)
            if (m->entries[i].hash)
                memo_place(entries, capacity - 1, &m->entries[i]);
        PyMem_Free(m->entries);
        m->entries = entries;
        m->mask = capacity - 1;
    }
    MemoEntry e = {k->hash,     Py_NewRef(k->method), Py_NewRef(k->path), Py_NewRef(k->cls),
                   k->lineno,   k->lineno_tag,        k->flags,           Py_NewRef(co)};
    memo_place(m->entries, m->mask, &e);
    m->used++;
}

/* ------------------------------------------------------------------ query tree's row facts */

/* tree_facts(roots, sql_labels, fn_info, absent, label, CallNode) -> (info, sig), or
 * NotImplemented
 *
 * The loop of `tracetool.query.tree._facts`: each node below `roots` (a list of
 * CallNodes), walked in pre-order backwards so that children come before their parents, gets
 * its row facts `info[node]` = (kind, label, extra) and its signature `sig[node]`, an int equal
 * for two nodes when their kinds, labels, `extra.get("status")` and their children's
 * signatures are (hashed as Python hashes them, then mixed as `bind_heads`' memo mixes: the
 * Python loop's `hash` of a tuple makes other ints that compare the same way).
 *
 * A function call's facts are `fn_info[key]`, its key made as `_facts` makes it
 * (`_function_key`, `absent` for a missing class or method, then its path and line), made by
 * `label(node)` on a miss; a memo in front of `fn_info` finds the keys of plain parts by their
 * strings' bytes (`memo_key`: the dict's siphash of three fresh strings per call was most of
 * this loop). A SQL call whose id is in `sql_labels` gets ("sql", that label, {}), one tuple
 * per label; any other call gets `label(node)` (`_label`). NotImplemented, with nothing done,
 * when a node is not of the known CallNode class (`learn_node_type`), a call is not an exact
 * dict or children not an exact list.
 *
 * The largest seed-1 recording (17,094 calls; `_rows` with limit 1000): ~95 -> ~33 ms, this
 * loop 23-25 ms (52 M instructions, most of them the dict lookups of event fields and the
 * inserts into `info` and `sig`). */

typedef struct {
    PyObject *sql_labels, *fn_info, *absent, *label;
    PyObject *sql_facts; /* label -> ("sql", label, {}) */
    Memo memo; /* in front of fn_info (`functions` unused; no `entries`: no memo) */
} FactsContext;

/* A function call's facts (new ref): see above. */
static PyObject *
function_facts(FactsContext *c, PyObject *node, PyObject *call)
{
    PyObject *cls = PyDict_GetItemWithError(call, head_names[H_CLASS]), *method, *st, *where, *line;
    if (cls == NULL && PyErr_Occurred())
        return NULL;
    if ((method = PyDict_GetItemWithError(call, head_names[H_METHOD])) == NULL && PyErr_Occurred())
        return NULL;
    if ((st = PyDict_GetItemWithError(call, head_names[H_STATIC])) == NULL && PyErr_Occurred())
        return NULL;
    if ((where = PyDict_GetItemWithError(call, head_names[H_PATH])) == NULL && PyErr_Occurred())
        return NULL;
    cls = cls != NULL ? cls : c->absent;
    method = method != NULL ? method : c->absent;
    where = where != NULL ? where : Py_None;
    int is_static = st == NULL ? 0 : PyObject_IsTrue(st), located = PyObject_IsTrue(where);
    if (is_static < 0 || located < 0)
        return NULL;
    line = Py_None;
    if (located && (line = PyDict_GetItemWithError(call, head_names[H_LINENO])) == NULL) {
        if (PyErr_Occurred())
            return NULL;
        line = Py_None;
    }
    /* (the borrowed parts stay alive: the call holds them, and nothing runs before they are
     * in the key or the memo) */
    MemoKey k;
    k.hash = 0;
    if (c->memo.entries != NULL) {
        memo_key(&k, method, where, line, cls, is_static ? Py_True : Py_False, 0, c->absent);
        if (k.hash) {
            PyObject *found = memo_find(&c->memo, &k);
            if (found != NULL)
                return Py_NewRef(found);
        }
    }
    PyObject *key = PyTuple_Pack(5, cls, method, is_static ? Py_True : Py_False, where, line);
    if (key == NULL)
        return NULL;
    PyObject *facts = PyDict_GetItemWithError(c->fn_info, key);
    if (facts != NULL && facts != Py_None)
        Py_INCREF(facts);
    else if (PyErr_Occurred() || (facts = PyObject_CallOneArg(c->label, node)) == NULL ||
             PyDict_SetItem(c->fn_info, key, facts) < 0) {
        Py_DECREF(key);
        Py_XDECREF(facts);
        return NULL;
    }
    if (k.hash) /* (the key's parts are the tuple's: alive) */
        memo_add(&c->memo, &k, facts);
    Py_DECREF(key);
    return facts;
}

/* The facts of one call (new ref): see above. */
static PyObject *
facts_of(FactsContext *c, PyObject *node, PyObject *call)
{
    int has;
    if ((has = PyDict_Contains(call, head_names[H_SERVER])) != 0 ||
        (has = PyDict_Contains(call, head_names[H_CLIENT])) != 0)
        return has < 0 ? NULL : PyObject_CallOneArg(c->label, node);
    if ((has = PyDict_Contains(call, head_names[H_SQL])) != 0) {
        if (has < 0)
            return NULL;
        PyObject *id = PyDict_GetItemWithError(call, s_id), *known;
        if (id == NULL && PyErr_Occurred())
            return NULL;
        if ((known = PyDict_GetItemWithError(c->sql_labels, id != NULL ? id : Py_None)) == NULL ||
            known == Py_None) {
            if (PyErr_Occurred())
                return NULL;
            return PyObject_CallOneArg(c->label, node);
        }
        PyObject *facts = PyDict_GetItemWithError(c->sql_facts, known);
        if (facts != NULL)
            return Py_NewRef(facts);
        if (PyErr_Occurred())
            return NULL;
        PyObject *extra = PyDict_New();
        if (extra == NULL)
            return NULL;
        Py_INCREF(known); /* (sql_labels holds it; so will the tuple) */
        facts = PyTuple_Pack(3, s_sql, known, extra);
        Py_DECREF(extra);
        if (facts != NULL && PyDict_SetItem(c->sql_facts, known, facts) < 0)
            Py_CLEAR(facts);
        Py_DECREF(known);
        return facts;
    }
    if ((has = PyDict_Contains(call, head_names[H_METHOD])) == 0)
        has = PyDict_Contains(call, head_names[H_CLASS]);
    if (has <= 0)
        return has < 0 ? NULL : PyObject_CallOneArg(c->label, node);
    return function_facts(c, node, call);
}

/* The hash of `obj` mixed into `h` (0 on an error) */
static inline int
mix_hash(uint64_t *h, PyObject *obj)
{
    Py_hash_t v = PyObject_Hash(obj);
    if (v == -1 && PyErr_Occurred())
        return 0;
    *h = memo_mix(*h, (uint64_t)v);
    return 1;
}

PyObject *
tt_tree_facts(PyObject *self, PyObject *args)
{
    PyObject *roots, *type;
    FactsContext c = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!OOO:tree_facts", &PyList_Type, &roots, &PyDict_Type,
                          &c.sql_labels, &PyDict_Type, &c.fn_info, &c.absent, &c.label, &type))
        return NULL;
    if (intern_names() < 0 || intern_tree_names() < 0 || intern_rpc_names() < 0 ||
        intern_head_names() < 0)
        return NULL;
    int known = learn_node_type(type);
    if (known != 0)
        return known < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    /* the pre-order, each node with its number of children (strong references) */
    Py_ssize_t n = 0, cap = 0;
    PyObject **nodes = NULL;
    Py_ssize_t *kids = NULL, *size = NULL;
    uint64_t *hashes = NULL;
    Stack stack = {NULL, 0, 0};
    PyObject *info = NULL, *sig = NULL, *out = NULL;
    int declined = 0;
    for (Py_ssize_t i = PyList_GET_SIZE(roots); i-- > 0;)
        if (push(&stack, PyList_GET_ITEM(roots, i), NULL) < 0)
            goto done;
    while (stack.size) {
        PyObject *node = stack.items[--stack.size].node; /* (our reference, kept in nodes) */
        if (n == cap) {
            Py_ssize_t grown = cap ? cap * 2 : 1024;
            PyObject **more = PyMem_Realloc(nodes, (size_t)grown * sizeof(PyObject *));
            Py_ssize_t *more_kids =
                more == NULL ? NULL : PyMem_Realloc(kids, (size_t)grown * sizeof(Py_ssize_t));
            if (more != NULL)
                nodes = more;
            if (more_kids != NULL)
                kids = more_kids;
            if (more == NULL || more_kids == NULL) {
                Py_DECREF(node);
                PyErr_NoMemory();
                goto done;
            }
            cap = grown;
        }
        nodes[n] = node;
        PyObject *children;
        if (Py_TYPE(node) != node_type || NODE_SLOT(node, N_CALL) == NULL ||
            !PyDict_CheckExact(NODE_SLOT(node, N_CALL)) ||
            (children = NODE_SLOT(node, N_CHILDREN)) == NULL || !PyList_CheckExact(children)) {
            kids[n++] = 0;
            declined = 1;
            goto done;
        }
        kids[n++] = PyList_GET_SIZE(children);
        for (Py_ssize_t i = PyList_GET_SIZE(children); i-- > 0;)
            if (push(&stack, PyList_GET_ITEM(children, i), NULL) < 0)
                goto done;
    }
    size = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    hashes = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    c.memo.entries = PyMem_Calloc(64, sizeof(MemoEntry)); /* (NULL: the dict alone) */
    c.memo.mask = 63;
    if (size == NULL || hashes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if ((info = _PyDict_NewPresized(n)) == NULL || (sig = _PyDict_NewPresized(n)) == NULL ||
        (c.sql_facts = PyDict_New()) == NULL)
        goto done;
    for (Py_ssize_t i = n; i-- > 0;) {
        PyObject *node = nodes[i], *call = NODE_SLOT(node, N_CALL), *children = NULL;
        /* (checked in the pre-order walk: another call now means `label` changed a node) */
        if (call == NULL || !PyDict_CheckExact(call)) {
            PyErr_SetString(PyExc_RuntimeError, "tree_facts: a call tree changed while read");
            goto done;
        }
        Py_INCREF(call);
        PyObject *facts = facts_of(&c, node, call), *status = NULL, *value = NULL;
        Py_DECREF(call);
        int failed = 1;
        if (facts == NULL)
            goto next;
        children = Py_XNewRef(NODE_SLOT(node, N_CHILDREN)); /* (read after `label` ran) */
        if (children == NULL || !PyList_CheckExact(children) ||
            PyList_GET_SIZE(children) != kids[i]) {
            PyErr_SetString(PyExc_RuntimeError, "tree_facts: a call tree changed while read");
            goto next;
        }
        if (!PyTuple_CheckExact(facts) || PyTuple_GET_SIZE(facts) != 3) {
            PyErr_SetString(PyExc_TypeError,
                            "tree_facts: a label is not a (kind, label, extra) tuple");
            goto next;
        }
        PyObject *extra = PyTuple_GET_ITEM(facts, 2);
        if (PyDict_CheckExact(extra)) {
            if ((status = PyDict_GetItemWithError(extra, s_status)) == NULL && PyErr_Occurred())
                goto next;
            status = Py_NewRef(status != NULL ? status : Py_None);
        }
        else if ((status = PyObject_CallMethod(extra, "get", "O", s_status)) == NULL)
            goto next;
        uint64_t h = 0x13198A2E03707344u;
        if (!mix_hash(&h, PyTuple_GET_ITEM(facts, 0)) ||
            !mix_hash(&h, PyTuple_GET_ITEM(facts, 1)) || !mix_hash(&h, status))
            goto next;
        h = memo_mix(h, (uint64_t)kids[i]);
        Py_ssize_t j = i + 1;
        for (Py_ssize_t k = 0; k < kids[i]; k++) {
            if (j >= n || nodes[j] != PyList_GET_ITEM(children, k)) {
                PyErr_SetString(PyExc_RuntimeError, "tree_facts: a call tree changed while read");
                goto next;
            }
            h = memo_mix(h, hashes[j]);
            j += size[j];
        }
        size[i] = j - i;
        hashes[i] = h;
        if (PyDict_SetItem(info, node, facts) < 0 ||
            (value = PyLong_FromLongLong((long long)(h >> 1))) == NULL ||
            PyDict_SetItem(sig, node, value) < 0)
            goto next;
        failed = 0;
    next:
        Py_XDECREF(children);
        Py_XDECREF(facts);
        Py_XDECREF(status);
        Py_XDECREF(value);
        if (failed)
            goto done;
    }
    out = PyTuple_Pack(2, info, sig);
done:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(nodes[i]);
    PyMem_Free(nodes);
    PyMem_Free(kids);
    PyMem_Free(size);
    PyMem_Free(hashes);
    clear_stack(&stack);
    memo_clear(&c.memo);
    Py_XDECREF(c.sql_facts);
    Py_XDECREF(info);
    Py_XDECREF(sig);
    if (declined && out == NULL && !PyErr_Occurred())
        return Py_NewRef(Py_NotImplemented);
    return out;
}

static PyObject *s_request_method, *s_path_info, *s_normalized_path_info, *s_url;

/* `apply._request_key(call)` (new ref: the key, or None), `tags` its (_SERVER_REQUEST,
 * _CLIENT_REQUEST); NULL with an error */
static PyObject *
request_key(const HeadLayout *layout, PyObject *call, PyObject *unset, PyObject *tags)
{
    if (s_url == NULL && ((s_request_method = PyUnicode_InternFromString("request_method")) ==
                              NULL ||
                          (s_path_info = PyUnicode_InternFromString("path_info")) == NULL ||
                          (s_normalized_path_info =
                               PyUnicode_InternFromString("normalized_path_info")) == NULL ||
                          (s_url = PyUnicode_InternFromString("url")) == NULL))
        return NULL;
    PyObject *request = head_field(layout, call, H_SERVER);
    if (request == NULL)
        return NULL;
    int server = request != unset;
    if (!server) {
        Py_DECREF(request);
        if ((request = head_field(layout, call, H_CLIENT)) == NULL)
            return NULL;
    }
    if (!PyDict_CheckExact(request)) {
        Py_DECREF(request);
        Py_RETURN_NONE;
    }
    PyObject *names[3] = {s_request_method, server ? s_path_info : s_url, s_normalized_path_info};
    PyObject *parts[4] = {PyTuple_GET_ITEM(tags, server ? 0 : 1), NULL, NULL, NULL};
    int n = server ? 4 : 3;
    for (int k = 1; k < n; k++) {
        PyObject *v = PyDict_GetItemWithError(request, names[k - 1]); /* (borrowed) */
        if (v == NULL && PyErr_Occurred()) {
            Py_DECREF(request);
            return NULL;
        }
        if (v == NULL)
            v = Py_None;
        if (v != Py_None && !PyUnicode_CheckExact(v)) {
            Py_DECREF(request);
            Py_RETURN_NONE;
        }
        parts[k] = v;
    }
    /* (a server request's path_info is not read when its normalized_path_info is a non-empty
     * string: `_request_key`) */
    if (server && parts[3] != Py_None && PyUnicode_GET_LENGTH(parts[3]) > 0)
        parts[2] = Py_None;
    PyObject *key = server ? PyTuple_Pack(4, parts[0], parts[1], parts[2], parts[3])
                           : PyTuple_Pack(3, parts[0], parts[1], parts[2]);
    Py_DECREF(request);
    return key;
}

/* bind_heads(calls, functions, unnamed, resolve, UNSET[, memo[, tags]]) -> code objects: the
 * loop of `tracetool.filters.apply._bind_heads`, with `resolve` its `_head_resolver` (called
 * for what the function cache `functions` does not hold, and for every call it does not key);
 * `memo` a list of one item where the cache's memo is kept (`BindState.memo`, None at first);
 * `tags` the (server, client) tags of `_request_key`'s keys, when an HTTP request's key is
 * to be made here (what the cache holds for it is taken without calling `resolve`). */
PyObject *
tt_bind_heads(PyObject *self, PyObject *args)
{
    PyObject *calls, *functions, *unnamed, *resolve, *unset, *holder = NULL, *tags = NULL;
    if (!PyArg_ParseTuple(args, "O!O!OOO|OO!:bind_heads", &PyList_Type, &calls, &PyDict_Type,
                          &functions, &unnamed, &resolve, &unset, &holder, &PyTuple_Type, &tags))
        return NULL;
    if (tags != NULL && PyTuple_GET_SIZE(tags) != 2)
        tags = NULL;
    Memo *memo = memo_of(holder, functions);
    if (intern_head_names() < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(calls);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    HeadLayout layout = {NULL, {0}};
    /* (the list may change under `resolve`: each call is read again by index, and the output
     * sized by the list as it was, as the Python loop iterates it as it is) */
    Py_ssize_t i = 0;
    for (; i < PyList_GET_SIZE(calls) && i < n; i++) {
        PyObject *call = PyList_GET_ITEM(calls, i);
        Py_INCREF(call);
        if (Py_TYPE(call) != layout.type)
            learn_head_layout(&layout, Py_TYPE(call));
        PyObject *co = NULL, *key = NULL;
        PyObject *sqlv = head_field(&layout, call, H_SQL);
        if (sqlv == NULL)
            goto fail;
        int sql = sqlv != unset;
        Py_DECREF(sqlv);
        if (unnamed != Py_None && sql) {
            Py_INCREF(unnamed);
            co = unnamed;
            goto append;
        }
        PyObject *method = head_field(&layout, call, H_METHOD);
        if (method == NULL)
            goto fail;
        if (method != Py_None && method != unset) {
            PyObject *server = head_field(&layout, call, H_SERVER);
            if (server == NULL) {
                Py_DECREF(method);
                goto fail;
            }
            int keyed = server == unset;
            Py_DECREF(server);
            if (keyed) {
                /* the key's parts, read first: a memo hit makes no tuple */
                PyObject *parts[6] = {method, NULL, NULL, NULL, NULL, NULL};
                static const int fields[4] = {H_PATH, H_LINENO, H_CLASS, H_STATIC};
                int flag = sql, k = 0;
                for (; k < 4; k++)
                    if ((parts[k + 1] = head_field(&layout, call, fields[k])) == NULL)
                        break;
                if (k == 4 && !flag) {
                    PyObject *client = head_field(&layout, call, H_CLIENT);
                    if (client == NULL)
                        k = -1;
                    else {
                        flag = client != unset;
                        Py_DECREF(client);
                    }
                }
                MemoKey mk = {0};
                if (k == 4 && memo != NULL) {
                    memo_key(&mk, method, parts[1], parts[2], parts[3], parts[4], flag, unset);
                    if (mk.hash && (co = memo_find(memo, &mk)) != NULL)
                        Py_INCREF(co);
                }
                if (k == 4 && co == NULL) {
                    parts[5] = Py_NewRef(flag ? Py_True : Py_False);
                    key = PyTuple_New(6);
                    if (key != NULL)
                        for (int j = 0; j < 6; j++) { /* (the tuple takes the references) */
                            PyTuple_SET_ITEM(key, j, parts[j]);
                            parts[j] = NULL;
                        }
                }
                for (int j = 0; j < 6; j++)
                    Py_XDECREF(parts[j]);
                if (co != NULL)
                    goto append;
                if (key == NULL)
                    goto fail;
                co = PyDict_GetItemWithError(functions, key); /* (borrowed) */
                if (co != NULL && co != Py_None) {
                    Py_INCREF(co);
                }
                else {
                    if (co == NULL && PyErr_Occurred())
                        goto fail;
                    co = PyObject_CallOneArg(resolve, call);
                    if (co == NULL || PyDict_SetItem(functions, key, co) < 0)
                        goto fail;
                }
                if (mk.hash && co != Py_None) {
                    /* (the memo keeps the key's strings: borrowed from the tuple until then) */
                    memo_key(&mk, PyTuple_GET_ITEM(key, 0), PyTuple_GET_ITEM(key, 1),
                             PyTuple_GET_ITEM(key, 2), PyTuple_GET_ITEM(key, 3),
                             PyTuple_GET_ITEM(key, 4), flag, unset);
                    if (mk.hash)
                        memo_add(memo, &mk, co);
                }
                Py_CLEAR(key);
                goto append;
            }
        }
        Py_DECREF(method);
        if (tags != NULL) { /* an HTTP request whose code object the cache holds */
            key = request_key(&layout, call, unset, tags);
            if (key == NULL)
                goto fail;
            if (key != Py_None) {
                co = PyDict_GetItemWithError(functions, key); /* (borrowed) */
                if (co == NULL && PyErr_Occurred())
                    goto fail;
            }
            Py_CLEAR(key);
            if (co != NULL && co != Py_None) {
                Py_INCREF(co);
                goto append;
            }
            co = NULL;
        }
        co = PyObject_CallOneArg(resolve, call);
        if (co == NULL)
            goto fail;
    append:
        Py_DECREF(call);
        PyList_SET_ITEM(out, i, co);
        continue;
    fail:
        Py_XDECREF(co);
        Py_XDECREF(key);
        Py_DECREF(call);
        Py_DECREF(out);
        return NULL;
    }
    if (i < n && PyList_SetSlice(out, i, n, NULL) < 0) { /* (the list shrank under `resolve`) */
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------------ loop folding */

/* fold_loops(items, tally, Action, LOOP, loop_digest) -> items folded: `loops.fold` (its
 * passes (windows of 1 to 5, loops.MAX_WINDOW), `_loop` and `_absorb`), the same actions made
 * and changed in the same order; `loop_digest` is `digests.loop_digest`, and the elapsed sums
 * are made by `sum` itself, so they are the ones Python makes (float sums differ between
 * Python versions). NotImplemented when `items` is not a list or `Action` not a class whose
 * slots this file fills (`loops.fold` then folds them). */

static PyObject *builtin_sum, *s_loop, *s_event_ids, *loop_type;

/* `value or 0` (a new reference) */
static PyObject *
or_zero(PyObject *value)
{
    int truth = PyObject_IsTrue(value);
    if (truth < 0)
        return NULL;
    return Py_NewRef(truth ? value : zero);
}

/* `sum((a.elapsed or 0) for a in actions)` over items [start, stop) step `step` of `actions` */
static PyObject *
elapsed_sum(PyObject *actions, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t step)
{
    PyObject *terms = PyList_New(0);
    if (terms == NULL)
        return NULL;
    for (Py_ssize_t i = start; i < stop; i += step) {
        PyObject *elapsed = action_slot(PyList_GET_ITEM(actions, i), S_ELAPSED, s_elapsed);
        PyObject *term = elapsed == NULL ? NULL : or_zero(elapsed);
        Py_XDECREF(elapsed);
        if (term == NULL || PyList_Append(terms, term) < 0) {
            Py_XDECREF(term);
            Py_DECREF(terms);
            return NULL;
        }
        Py_DECREF(term);
    }
    PyObject *total = PyObject_CallOneArg(builtin_sum, terms);
    Py_DECREF(terms);
    return total;
}

typedef struct {
    PyObject *target; /* (strong references) */
    PyObject *dups;   /* a list */
} Absorb;

/* `loops._absorb(action, dups)`: 0, or -1 with an exception set; steals `dups`. */
static int
absorb(PyObject *action, PyObject *dups)
{
    Absorb *stack = NULL;
    Py_ssize_t size = 0, cap = 0;
    int rc = -1;
#define PUSH(t, d)                                                             \
    do {                                                                       \
        if (size == cap) {                                                     \
            Py_ssize_t more = cap ? 2 * cap : 16;                              \
            Absorb *grown = PyMem_Realloc(stack, (size_t)more * sizeof(Absorb)); \
            if (grown == NULL) {                                               \
                Py_DECREF(d);                                                  \
                PyErr_NoMemory();                                              \
                goto done;                                                     \
            }                                                                  \
            stack = grown;                                                     \
            cap = more;                                                        \
        }                                                                      \
        stack[size].target = Py_NewRef(t);                                     \
        stack[size].dups = (d);                                                \
        size++;                                                                \
    } while (0)
    PUSH(action, dups);
    while (size) {
        Absorb item = stack[--size];
        PyObject *target = item.target, *ds = item.dups;
        PyObject *ids = NULL, *merged = NULL, *elapsed = NULL, *own = NULL, *more = NULL,
                 *total = NULL, *children = NULL, *seq = NULL;
        int failed = 1;
        Py_ssize_t nd = PyList_GET_SIZE(ds);
        if (nd) {
            if ((ids = action_slot(target, S_EVENT_IDS, s_event_ids)) == NULL ||
                (merged = PySequence_List(ids)) == NULL)
                goto next;
            for (Py_ssize_t k = 0; k < nd; k++) {
                PyObject *dids = action_slot(PyList_GET_ITEM(ds, k), S_EVENT_IDS, s_event_ids);
                int bad = dids == NULL ||
                          PyList_SetSlice(merged, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, dids) < 0;
                Py_XDECREF(dids);
                if (bad)
                    goto next;
            }
            if (PyList_Sort(merged) < 0 ||
                set_action_slot(target, S_EVENT_IDS, s_event_ids, merged) < 0)
                goto next;
        }
        if ((elapsed = action_slot(target, S_ELAPSED, s_elapsed)) == NULL ||
            (own = or_zero(elapsed)) == NULL || (more = elapsed_sum(ds, 0, nd, 1)) == NULL ||
            (total = PyNumber_Add(own, more)) == NULL ||
            set_action_slot(target, S_ELAPSED, s_elapsed, total) < 0)
            goto next;
        if ((children = action_slot(target, S_CHILDREN, s_children)) == NULL ||
            (seq = PySequence_Fast(children, "children must be iterable")) == NULL)
            goto next;
        for (Py_ssize_t index = 0; index < PySequence_Fast_GET_SIZE(seq); index++) {
            PyObject *child_dups = PyList_New(0);
            if (child_dups == NULL)
                goto next;
            for (Py_ssize_t k = 0; k < nd; k++) {
                PyObject *dc = action_slot(PyList_GET_ITEM(ds, k), S_CHILDREN, s_children);
                Py_ssize_t len = dc == NULL ? -1 : PyObject_Size(dc);
                PyObject *c = len > index ? PySequence_GetItem(dc, index) : NULL;
                int bad = len < 0 ||
                          (len > index && (c == NULL || PyList_Append(child_dups, c) < 0));
                Py_XDECREF(c);
                Py_XDECREF(dc);
                if (bad) {
                    Py_DECREF(child_dups);
                    goto next;
                }
            }
            PUSH(PySequence_Fast_ITEMS(seq)[index], child_dups);
        }
        failed = 0;
    next:
        Py_XDECREF(ids);
        Py_XDECREF(merged);
        Py_XDECREF(elapsed);
        Py_XDECREF(own);
        Py_XDECREF(more);
        Py_XDECREF(total);
        Py_XDECREF(children);
        Py_XDECREF(seq);
        Py_DECREF(target);
        Py_DECREF(ds);
        if (failed)
            goto done;
    }
    rc = 0;
done:
    while (size) {
        size--;
        Py_DECREF(stack[size].target);
        Py_DECREF(stack[size].dups);
    }
    PyMem_Free(stack);
    return rc;
#undef PUSH
}

/* `count_actions(actions[start:stop])`: the actions and all their descendants; -1 on error */
static Py_ssize_t
count_below(PyObject *actions, Py_ssize_t start, Py_ssize_t stop)
{
    PyObject *level = PyList_GetSlice(actions, start, stop);
    Py_ssize_t count = 0;
    while (level != NULL && PyList_GET_SIZE(level)) {
        count += PyList_GET_SIZE(level);
        PyObject *next = PyList_New(0);
        for (Py_ssize_t i = 0; next != NULL && i < PyList_GET_SIZE(level); i++) {
            PyObject *children = action_slot(PyList_GET_ITEM(level, i), S_CHILDREN, s_children);
            if (children == NULL ||
                PyList_SetSlice(next, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, children) < 0)
                Py_CLEAR(next);
            Py_XDECREF(children);
        }
        Py_SETREF(level, next);
    }
    if (level == NULL)
        return -1;
    Py_DECREF(level);
    return count;
}

/* `loops._loop(windows)` of the k windows of w items of `items` from `i`, a new reference */
static PyObject *
make_loop(PyObject *items, Py_ssize_t i, Py_ssize_t w, Py_ssize_t k, PyObject *loop_digest)
{
    PyObject *members = PyList_GetSlice(items, i, i + w);
    PyObject *loop = NULL, *digests = NULL, *value = NULL;
    if (members == NULL)
        return NULL;
    for (Py_ssize_t index = 0; index < w; index++) {
        PyObject *dups = PyList_New(k - 1);
        if (dups == NULL)
            goto error;
        for (Py_ssize_t m = 1; m < k; m++)
            PyList_SET_ITEM(dups, m - 1, Py_NewRef(PyList_GET_ITEM(items, i + m * w + index)));
        if (absorb(PyList_GET_ITEM(members, index), dups) < 0)
            goto error;
    }
    if ((loop = new_action(1, s_loop)) == NULL)
        goto error;
    set_slot(loop, S_NODE_TYPE, loop_type);
    if ((value = PyLong_FromSsize_t(k)) == NULL)
        goto error;
    set_slot(loop, S_COUNT, value);
    Py_CLEAR(value);
    if ((digests = PyList_New(w)) == NULL)
        goto error;
    for (Py_ssize_t index = 0; index < w; index++) {
        PyObject *d =
            action_slot(PyList_GET_ITEM(members, index), S_SUBTREE_DIGEST, s_subtree_digest);
        if (d == NULL)
            goto error;
        PyList_SET_ITEM(digests, index, d);
    }
    if ((value = PyObject_CallOneArg(loop_digest, digests)) == NULL)
        goto error;
    set_slot(loop, S_SUBTREE_DIGEST, value);
    Py_CLEAR(value);
    set_slot(loop, S_CHILDREN, members);
    if ((value = elapsed_sum(members, 0, w, 1)) == NULL)
        goto error;
    set_slot(loop, S_ELAPSED, value);
    Py_CLEAR(value);
    if ((value = PyList_New(0)) == NULL)
        goto error;
    set_slot(loop, S_EVENT_IDS, value);
    Py_DECREF(value);
    Py_DECREF(members);
    Py_DECREF(digests);
    return loop;
error:
    Py_DECREF(members);
    Py_XDECREF(loop);
    Py_XDECREF(digests);
    Py_XDECREF(value);
    return NULL;
}

/* keys[a:a+w] == keys[b:b+w]: 1, 0, -1 */
static int
windows_equal(PyObject **keys, Py_ssize_t a, Py_ssize_t b, Py_ssize_t w)
{
    for (Py_ssize_t t = 0; t < w; t++) {
        int eq = PyObject_RichCompareBool(keys[a + t], keys[b + t], Py_EQ);
        if (eq <= 0)
            return eq;
    }
    return 1;
}

/* `loops._pass(items, w, tally)`: a new list, Py_None (a new reference) when nothing folded */
static PyObject *
fold_pass(PyObject *items, Py_ssize_t w, PyObject *tally, PyObject *loop_digest)
{
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *keys = PyList_New(n), *out = NULL;
    int changed = 0;
    if (keys == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = action_slot(PyList_GET_ITEM(items, i), S_SUBTREE_DIGEST, s_subtree_digest);
        if (d == NULL)
            goto error;
        PyList_SET_ITEM(keys, i, d);
    }
    PyObject **k = &PyList_GET_ITEM(keys, 0);
    if ((out = PyList_New(0)) == NULL)
        goto error;
    Py_ssize_t i = 0;
    while (i < n) {
        int starts = 0;
        if (i + 2 * w <= n) {
            starts = PyObject_RichCompareBool(k[i], k[i + w], Py_EQ);
            if (starts > 0)
                starts = windows_equal(k, i, i + w, w);
            if (starts < 0)
                goto error;
        }
        if (!starts) {
            if (PyList_Append(out, PyList_GET_ITEM(items, i)) < 0)
                goto error;
            i++;
            continue;
        }
        Py_ssize_t j = i + w, count = 1;
        while (j + w <= n) {
            int eq = windows_equal(k, j, i, w);
            if (eq < 0)
                goto error;
            if (!eq)
                break;
            j += w;
            count++;
        }
        PyObject *loop = make_loop(items, i, w, count, loop_digest);
        if (loop == NULL)
            goto error;
        int bad = PyList_Append(out, loop) < 0;
        Py_DECREF(loop);
        if (bad)
            goto error;
        if (tally != Py_None) {
            Py_ssize_t below = count_below(items, i + w, j);
            if (below < 0)
                goto error;
            PyObject *delta = PyLong_FromSsize_t(1 - below);
            PyObject *old = delta == NULL ? NULL : PySequence_GetItem(tally, 0);
            PyObject *sum = old == NULL ? NULL : PyNumber_InPlaceAdd(old, delta);
            bad = sum == NULL || PySequence_SetItem(tally, 0, sum) < 0;
            Py_XDECREF(delta);
            Py_XDECREF(old);
            Py_XDECREF(sum);
            if (bad)
                goto error;
        }
        changed = 1;
        i = j;
    }
    Py_DECREF(keys);
    if (!changed) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
error:
    Py_DECREF(keys);
    Py_XDECREF(out);
    return NULL;
}

PyObject *
tt_fold_loops(PyObject *self, PyObject *args)
{
    PyObject *items, *tally, *type, *loop, *loop_digest;
    if (!PyArg_ParseTuple(args, "OOOOO:fold_loops", &items, &tally, &type, &loop, &loop_digest))
        return NULL;
    if (intern_names() < 0)
        return NULL;
    if (s_subtree_digest == NULL) {
        if ((s_digest = PyUnicode_InternFromString("digest")) == NULL ||
            (s_subtree_digest = PyUnicode_InternFromString("subtree_digest")) == NULL)
            return NULL;
    }
    if (s_loop == NULL) {
        PyObject *builtins = PyEval_GetBuiltins(); /* (borrowed) */
        PyObject *sum = builtins == NULL ? NULL : PyDict_GetItemString(builtins, "sum");
        if (sum == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "no builtin sum");
            return NULL;
        }
        builtin_sum = Py_NewRef(sum);
        if ((s_event_ids = PyUnicode_InternFromString("event_ids")) == NULL ||
            (s_loop = PyUnicode_InternFromString("loop")) == NULL)
            return NULL;
    }
    int learned = learn_action_type(type);
    if (learned < 0)
        return NULL;
    if (learned > 0 || !PyList_CheckExact(items))
        Py_RETURN_NOTIMPLEMENTED;
    Py_XSETREF(loop_type, Py_NewRef(loop));
    /* a loop needs two equal subtree digests among the siblings: most lists have none */
    PyObject *keys = PySet_New(NULL);
    if (keys == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *d = action_slot(PyList_GET_ITEM(items, i), S_SUBTREE_DIGEST, s_subtree_digest);
        int bad = d == NULL || PySet_Add(keys, d) < 0;
        Py_XDECREF(d);
        if (bad) {
            Py_DECREF(keys);
            return NULL;
        }
    }
    int distinct = PySet_GET_SIZE(keys) == PyList_GET_SIZE(items);
    Py_DECREF(keys);
    Py_INCREF(items);
    if (distinct)
        return items;
    for (Py_ssize_t window = 1; window <= 5; window++) {
        if (PyList_GET_SIZE(items) < 2 * window)
            break;
        for (;;) {
            PyObject *folded = fold_pass(items, window, tally, loop_digest);
            if (folded == NULL) {
                Py_DECREF(items);
                return NULL;
            }
            if (folded == Py_None) {
                Py_DECREF(folded);
                break;
            }
            Py_SETREF(items, folded);
        }
    }
    return items;
}

/* ------------------------------------------------------------------ SQL literals masked */

/* The end (one past the closing quote) of the quoted text that opens at `p[i]` (the quote
 * `q`), as `q(?:[^q]|qq)*q` matches it: the first lone quote closes it; with none before the
 * end, the first quote of the last doubled pair does (the regex gives tokens back from the
 * end); -1 when there is no pair either (no match). */
static Py_ssize_t
quoted_end(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, unsigned char q)
{
    Py_ssize_t last_pair = -1;
    for (Py_ssize_t k = i + 1; k < n;) {
        if (p[k] != q)
            k++;
        else if (k + 1 < n && p[k + 1] == q) {
            last_pair = k;
            k += 2;
        }
        else
            return k + 1;
    }
    return last_pair < 0 ? -1 : last_pair + 1;
}

static inline int
ascii_word(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           c == '_';
}

static inline int
ascii_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* sql_premask(sql) -> str, or None: `tracetool.diagram.digests._PRE.sub` of an ASCII text
 * (quoted names kept; '...' strings and plain numbers written `?`), scanning as the regex
 * does: at each place, its alternatives in order (a "name" with doubled quotes, a `name`, a
 * [name], a 'string' with doubled quotes, then a number: digits, maybe `.digits`, not after
 * a word character or one of `$.?:@`, not before a word character or `.`), else the character
 * is kept and the scan moves on by one. None for what is not an exact ASCII str (the regex's
 * \w and \d are Unicode's there): the caller uses the regex. */
PyObject *
tt_sql_premask(PyObject *self, PyObject *sql)
{
    if (!PyUnicode_CheckExact(sql) || PyUnicode_READY(sql) < 0 || !PyUnicode_IS_ASCII(sql)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(sql);
    const unsigned char *p = PyUnicode_1BYTE_DATA(sql);
    unsigned char *out = PyMem_Malloc(n > 0 ? (size_t)n : 1);
    if (out == NULL)
        return PyErr_NoMemory();
    Py_ssize_t o = 0;
    for (Py_ssize_t i = 0; i < n;) {
        unsigned char c = p[i];
        Py_ssize_t end = -1;
        int masked = 0;
        if (c == '"')
            end = quoted_end(p, i, n, '"');
        else if (c == '`' || c == '[') {
            const unsigned char *close = memchr(p + i + 1, c == '`' ? '`' : ']', (size_t)(n - i - 1));
            if (close != NULL)
                end = close - p + 1;
        }
        else if (c == '\'') {
            end = quoted_end(p, i, n, '\'');
            masked = 1;
        }
        else if (ascii_digit(c)) {
            unsigned char before = i > 0 ? p[i - 1] : ' ';
            if (!(ascii_word(before) || before == '$' || before == '.' || before == '?' ||
                  before == ':' || before == '@')) {
                Py_ssize_t j = i + 1;
                while (j < n && ascii_digit(p[j]))
                    j++;
                if (j + 1 < n && p[j] == '.' && ascii_digit(p[j + 1])) {
                    j += 2;
                    while (j < n && ascii_digit(p[j]))
                        j++;
                }
                /* (when the lookahead fails, giving digits back cannot help: a digit or the
                 * `.` then follows) */
                if (j == n || !(ascii_word(p[j]) || p[j] == '.')) {
                    end = j;
                    masked = 1;
                }
            }
        }
        if (end < 0) {
            out[o++] = c;
            i++;
        }
        else if (masked) {
            out[o++] = '?';
            i = end;
        }
        else {
            memcpy(out + o, p + i, (size_t)(end - i));
            o += end - i;
            i = end;
        }
    }
    PyObject *result = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, out, o);
    PyMem_Free(out);
    return result;
}

/* sql_keywords_upper(sql, keywords) -> str, or None: `digests._canonical`'s
 * `_WORD.sub(upper, text)` of an ASCII text, `keywords` its set of lower-case keywords: quoted
 * names ("name" to the next quote, `name`, [name]) kept, and every word of letters and `_`
 * between non-word characters (not next to a letter, digit or `_`) upper-cased when its
 * lower-case form is a keyword. None for what is not an exact ASCII str (the regex's \b is
 * Unicode's there): the caller uses the regex. */
PyObject *
tt_sql_keywords_upper(PyObject *self, PyObject *args)
{
    PyObject *sql, *keywords;
    if (!PyArg_ParseTuple(args, "OO:sql_keywords_upper", &sql, &keywords))
        return NULL;
    if (!PyUnicode_CheckExact(sql) || PyUnicode_READY(sql) < 0 || !PyUnicode_IS_ASCII(sql)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(sql);
    const unsigned char *p = PyUnicode_1BYTE_DATA(sql);
    PyObject *result = PyUnicode_New(n, 127);
    if (result == NULL)
        return NULL;
    unsigned char *out = PyUnicode_1BYTE_DATA(result);
    memcpy(out, p, (size_t)n);
    for (Py_ssize_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"' || c == '`' || c == '[') {
            const unsigned char *close =
                memchr(p + i + 1, c == '[' ? ']' : c, (size_t)(n - i - 1));
            i = close != NULL ? close - p + 1 : i + 1;
            continue;
        }
        int letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!letter || (i > 0 && ascii_word(p[i - 1]))) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < n && ((p[j] >= 'A' && p[j] <= 'Z') || (p[j] >= 'a' && p[j] <= 'z') ||
                         p[j] == '_'))
            j++;
        if (j < n && ascii_word(p[j])) { /* (no word boundary after the run) */
            i = j;
            continue;
        }
        /* word.lower() in keywords */
        char lower[32];
        if (j - i < (Py_ssize_t)sizeof(lower)) {
            for (Py_ssize_t k = i; k < j; k++)
                lower[k - i] = (char)(p[k] >= 'A' && p[k] <= 'Z' ? p[k] + 32 : p[k]);
            PyObject *word = PyUnicode_FromStringAndSize(lower, j - i);
            int keyword = word == NULL ? -1 : PySequence_Contains(keywords, word);
            Py_XDECREF(word);
            if (keyword < 0) {
                Py_DECREF(result);
                return NULL;
            }
            if (keyword)
                for (Py_ssize_t k = i; k < j; k++)
                    out[k] = (unsigned char)(p[k] >= 'a' && p[k] <= 'z' ? p[k] - 32 : p[k]);
        }
        else { /* (longer than any keyword could be: asked of the set all the same) */
            PyObject *word = PyUnicode_FromStringAndSize((const char *)p + i, j - i);
            PyObject *low = word == NULL ? NULL : PyObject_CallMethod(word, "lower", NULL);
            int keyword = low == NULL ? -1 : PySequence_Contains(keywords, low);
            Py_XDECREF(word);
            Py_XDECREF(low);
            if (keyword < 0) {
                Py_DECREF(result);
                return NULL;
            }
            if (keyword)
                for (Py_ssize_t k = i; k < j; k++)
                    out[k] = (unsigned char)(p[k] >= 'a' && p[k] <= 'z' ? p[k] - 32 : p[k]);
        }
        i = j;
    }
    return result;
}
