/* tracetool/_speedups_arena.c: pymalloc's arenas faulted in ahead of use, by a helper thread.
 *
 * A source file of the optional `tracetool._speedups` extension (setup.py); its entry point is
 * in `_speedups.c`'s method table:
 *
 *     fault_ahead(ahead, start) -> bool (whether it is on)
 *
 * Why: a one-shot command that reads a big recording whole builds ~150 MB of small objects
 * (msgspec's structs, the call tree, the diagram's actions) in pymalloc's 1 MiB arenas, each
 * mapped afresh. Every first write to one of their pages is a page fault in the command's one
 * busy thread: ~40,000 of them for a 60 MB recording's diagram, each the dearer on a virtual
 * machine whose host hands the guest its memory lazily (0.1 s or more of system time). The
 * other core is idle meanwhile. Here a helper thread faults the pages in before the command
 * reaches them, so the command finds them mapped.
 *
 * How: `fault_ahead` installs an arena allocator (`PyObject_SetArenaAllocator`). Arenas of
 * pymalloc's size (1 MiB) come one after another from one address range reserved at once
 * (`MAP_NORESERVE`: no memory until used). Once `start` bytes of arenas have been handed out
 * (a command with a small heap never gets that far and never starts the thread), a helper
 * pthread keeps the range faulted in up to `ahead` bytes past the last arena handed out
 * (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14+, 4 MiB a call, without the GIL). The process
 * thus holds at most `ahead` bytes more than it uses. An arena pymalloc frees is kept for the
 * next one (up to `HOT_KEEP` of them mapped, the others handed back to the kernel with
 * `MADV_DONTNEED` and reused later). Arenas of another size, arenas beyond the range, and
 * arenas allocated before the call go to the allocator that was there before.
 *
 * It stays off (False, nothing changed) where it cannot help or might hurt: not Linux, an
 * address-space limit (RLIMIT_AS: the reserved range would count against it), a range that
 * cannot be reserved. A kernel without MADV_POPULATE_WRITE stops the helper at its first call:
 * the arenas are then faulted in by their user, as without this. A forked child keeps the
 * allocator and starts its own helper when it needs one. Tool only: the agent never imports
 * the extension, and only one-shot commands call this (`tracetool.cli.common.leave_to_exit`).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__linux__)

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define ARENA ((size_t)1 << 20)    /* pymalloc's arena (ARENA_BITS 20 on 64-bit, 3.10+) */
#define RANGE ((size_t)4 << 30)    /* reserved once; arenas past it come from the old allocator */
#define SLOTS (RANGE / ARENA)      /* every arena of the range fits in the freed stacks */
#define STEP ((size_t)4 << 20)     /* one populate call */
#define HOT_KEEP 16                /* freed arenas kept mapped for the next ones */

static PyObjectArenaAllocator previous;
static int enabled;
static char *base, *end;
static char *cur;                  /* next arena of the range (the GIL holder's) */
static size_t ahead_bytes, start_bytes;
/* freed arenas: mapped ones (reused first) and ones given back to the kernel */
static void *hot[HOT_KEEP];
static size_t nhot;
static void **cold;
static size_t ncold;

/* the helper: `populated` is the end of the range faulted in, `want` where it should reach */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static char *populated, *want;
static int helper_started, helper_stopped;

static void *
helper(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (populated >= want)
            pthread_cond_wait(&wake, &lock);
        char *from = populated;
        char *used = __atomic_load_n(&cur, __ATOMIC_RELAXED);
        if (from < used)
            from = used; /* (behind the arenas in use: their user faults them in already) */
        char *to = from + STEP < want ? from + STEP : want;
        if (from >= to) {
            __atomic_store_n(&populated, from, __ATOMIC_RELAXED);
            continue;
        }
        pthread_mutex_unlock(&lock);
        int failed = madvise(from, (size_t)(to - from), MADV_POPULATE_WRITE) != 0;
        pthread_mutex_lock(&lock);
        if (failed) { /* (no such advice on this kernel, or no memory: the users fault it) */
            helper_stopped = 1;
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        __atomic_store_n(&populated, to, __ATOMIC_RELAXED);
    }
}

/* Have the helper reach `to` (started on the first call). With the GIL held. */
static void
populate_to(char *to)
{
    pthread_mutex_lock(&lock);
    if (!helper_stopped && to > want) {
        __atomic_store_n(&want, to, __ATOMIC_RELAXED);
        if (!helper_started) {
            pthread_t thread;
            pthread_attr_t attr;
            sigset_t all, was;
            helper_started = 1;
            if (pthread_attr_init(&attr) != 0)
                helper_stopped = 1;
            else {
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&attr, 64 * 1024);
                /* (born with every signal blocked: they stay the other threads' to handle) */
                sigfillset(&all);
                pthread_sigmask(SIG_BLOCK, &all, &was);
                if (pthread_create(&thread, &attr, helper, NULL) != 0)
                    helper_stopped = 1;
                pthread_sigmask(SIG_SETMASK, &was, NULL);
                pthread_attr_destroy(&attr);
            }
        }
        else
            pthread_cond_signal(&wake);
    }
    pthread_mutex_unlock(&lock);
}

static void *
arena_alloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size != ARENA)
        return previous.alloc(previous.ctx, size);
    if (nhot)
        return hot[--nhot];
    char *reached = __atomic_load_n(&populated, __ATOMIC_RELAXED);
    if (ncold && (cur >= reached || cur + ARENA > end))
        return cold[--ncold]; /* (faulted in by its user, as the range's would be) */
    if (cur + ARENA > end)
        return previous.alloc(previous.ctx, size);
    char *arena = cur;
    __atomic_store_n(&cur, cur + ARENA, __ATOMIC_RELAXED);
    if ((size_t)(cur - base) >= start_bytes && !helper_stopped) {
        char *to = (size_t)(end - cur) > ahead_bytes ? cur + ahead_bytes : end;
        if (to > __atomic_load_n(&want, __ATOMIC_RELAXED) + STEP / 2 || !helper_started)
            populate_to(to);
    }
    return arena;
}

static void
arena_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    char *p = (char *)ptr;
    if (p < base || p >= end) {
        previous.free(previous.ctx, ptr, size);
        return;
    }
    if (nhot < HOT_KEEP) {
        hot[nhot++] = ptr;
        return;
    }
    madvise(ptr, ARENA, MADV_DONTNEED); /* (its memory back; the address kept for reuse) */
    cold[ncold++] = ptr;
}

/* A forked child: no helper thread (only the forking one survives), a lock perhaps held. */
static void
after_fork_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&wake, NULL);
    populated = want = cur;
    helper_started = 0;
}

static int
enable(size_t ahead, size_t start)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY)
        return 0;
    cold = PyMem_RawMalloc(SLOTS * sizeof(void *));
    if (cold == NULL)
        return 0;
    void *range = mmap(NULL, RANGE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
        PyMem_RawFree(cold);
        cold = NULL;
        return 0;
    }
    if (pthread_atfork(NULL, NULL, after_fork_in_child) != 0) {
        munmap(range, RANGE);
        PyMem_RawFree(cold);
        cold = NULL;
        return 0;
    }
    base = cur = populated = want = range;
    end = base + RANGE;
    ahead_bytes = ahead;
    start_bytes = start;
    PyObjectArenaAllocator mine = {NULL, arena_alloc, arena_free};
    PyObject_GetArenaAllocator(&previous);
    PyObject_SetArenaAllocator(&mine);
    return 1;
}

#endif /* __linux__ */

PyObject *
tt_fault_ahead(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t ahead, start;
    if (!PyArg_ParseTuple(args, "nn", &ahead, &start))
        return NULL;
    if (ahead < 0 || start < 0) {
        PyErr_SetString(PyExc_ValueError, "fault_ahead: sizes must not be negative");
        return NULL;
    }
#if defined(__linux__)
    if (!enabled)
        enabled = enable((size_t)ahead, (size_t)start) ? 1 : -1;
    return PyBool_FromLong(enabled == 1);
#else
    Py_RETURN_FALSE;
#endif
}
