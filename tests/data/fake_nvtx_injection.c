/* A stand-in for an NVTX tool such as Nsight Systems, for tests/nvtx.rs: a program loads it
 * through NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2, which takes the core
 * callbacks and logs every call, one line each, to the file named by FAKE_NVTX_LOG.
 *
 * The types follow the NVTX v3 headers (nvToolsExt.h, nvtxDetail/nvtxTypes.h); no NVTX header
 * is needed to build it:  cc -shared -fPIC -o libfake_nvtx.so fake_nvtx_injection.c
 *
 * FAKE_NVTX_FAIL=1    the entry point fills the slots, then returns 0 (the tool declines)
 * FAKE_NVTX_ONLY_A=1  only the plain-message callbacks (MarkA, RangePushA, RangeStartA)
 *
 * Each line: "tid=<kernel thread id> <event> <fields>". Events: init, push, push_a, pop, mark,
 * mark_a, start, start_a, end, name_category, name_thread; init checks the tables it is given
 * and logs "init error=..." when they are not as NVTX lays them out.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* nvtxEventAttributes_v2 */
typedef struct {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t colorType;
    uint32_t color;
    int32_t payloadType;
    int32_t reserved0;
    union {
        uint64_t ullValue;
        int64_t llValue;
        double dValue;
        uint32_t uiValue;
        int32_t iValue;
        float fValue;
    } payload;
    int32_t messageType;
    union {
        const char *ascii;
        const void *unicode;
        const void *registered;
    } message;
} attrs_t;

typedef void (*fnptr_t)(void);
typedef fnptr_t **table_t;

/* NvtxExportTableCallbacks, NvtxExportTableVersionInfo */
typedef struct {
    size_t struct_size;
    int (*GetModuleFunctionTable)(int module, table_t *out_table, unsigned int *out_size);
} callbacks_t;

typedef struct {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*SetInjectionNvtxVersion)(uint32_t version);
} version_info_t;

typedef const void *(*get_export_table_t)(uint32_t id);

static int log_fd = -1;
static __thread int depth;
static uint64_t next_id = 100;

/* One line per call, written with one write() so threads' lines do not interleave. */
static void emit(const char *fmt, ...) {
    char line[2048];
    int n = snprintf(line, sizeof line, "tid=%ld ", (long)syscall(SYS_gettid));
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (log_fd >= 0 && write(log_fd, line, (size_t)n) < 0)
        log_fd = -1;
}

static const char *text(const char *s) { return s ? s : "(null)"; }

static void describe(char *out, size_t cap, const attrs_t *a) {
    char payload[64] = "none";
    if (!a) {
        snprintf(out, cap, "attrs=null");
        return;
    }
    switch (a->payloadType) {
    case 1: snprintf(payload, sizeof payload, "u64:%llu", (unsigned long long)a->payload.ullValue); break;
    case 2: snprintf(payload, sizeof payload, "i64:%lld", (long long)a->payload.llValue); break;
    case 3: snprintf(payload, sizeof payload, "f64:%g", a->payload.dValue); break;
    case 4: snprintf(payload, sizeof payload, "u32:%u", a->payload.uiValue); break;
    case 5: snprintf(payload, sizeof payload, "i32:%d", a->payload.iValue); break;
    case 6: snprintf(payload, sizeof payload, "f32:%g", (double)a->payload.fValue); break;
    default: break;
    }
    snprintf(out, cap,
             "version=%u size=%u color_type=%d color=0x%08x category=%u payload=%s reserved0=%d "
             "message_type=%d msg=\"%s\"",
             a->version, a->size, a->colorType, a->color, a->category, payload, a->reserved0,
             a->messageType, a->messageType == 1 ? text(a->message.ascii) : "");
}

static void mark_ex(const attrs_t *a) {
    char d[1600];
    describe(d, sizeof d, a);
    emit("mark %s", d);
}

static void mark_a(const char *m) { emit("mark_a msg=\"%s\"", text(m)); }

static uint64_t start_ex(const attrs_t *a) {
    char d[1600];
    uint64_t id = __atomic_add_fetch(&next_id, 1, __ATOMIC_SEQ_CST);
    describe(d, sizeof d, a);
    emit("start id=%llu %s", (unsigned long long)id, d);
    return id;
}

static uint64_t start_a(const char *m) {
    uint64_t id = __atomic_add_fetch(&next_id, 1, __ATOMIC_SEQ_CST);
    emit("start_a id=%llu msg=\"%s\"", (unsigned long long)id, text(m));
    return id;
}

static void end(uint64_t id) { emit("end id=%llu", (unsigned long long)id); }

static int push_ex(const attrs_t *a) {
    char d[1600];
    describe(d, sizeof d, a);
    emit("push depth=%d %s", depth, d);
    return depth++;
}

static int push_a(const char *m) {
    emit("push_a depth=%d msg=\"%s\"", depth, text(m));
    return depth++;
}

static int pop(void) {
    if (depth == 0) {
        emit("pop depth=-1 error=unbalanced");
        return -1;
    }
    --depth;
    emit("pop depth=%d", depth);
    return depth;
}

static void name_category(uint32_t id, const char *name) {
    emit("name_category id=%u name=\"%s\"", id, text(name));
}

static void name_thread(uint32_t os_tid, const char *name) {
    emit("name_thread os_tid=%u name=\"%s\"", os_tid, text(name));
}

/* NVTX_CBID_<module>_SIZE for NVTX_CB_MODULE_CORE .. NVTX_CB_MODULE_SYNC (1 .. 6). */
static const unsigned int expected_sizes[7] = {0, 16, 9, 15, 7, 16, 7};

int InitializeInjectionNvtx2(get_export_table_t get_export_table) {
    const char *log = getenv("FAKE_NVTX_LOG");
    const callbacks_t *cb;
    const version_info_t *vi;
    table_t core = 0;
    unsigned int core_size = 0;
    char sizes[128] = "";
    int m;

    if (log)
        log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (!get_export_table) {
        emit("init error=no export table getter");
        return 0;
    }
    cb = (const callbacks_t *)get_export_table(1); /* NVTX_ETID_CALLBACKS */
    vi = (const version_info_t *)get_export_table(3); /* NVTX_ETID_VERSIONINFO */
    if (!cb || cb->struct_size != sizeof(callbacks_t) || !cb->GetModuleFunctionTable) {
        emit("init error=bad callbacks table");
        return 0;
    }
    if (!vi || vi->struct_size != sizeof(version_info_t) || !vi->SetInjectionNvtxVersion) {
        emit("init error=bad version info table");
        return 0;
    }
    if (get_export_table(0) || get_export_table(2) || get_export_table(4)) {
        emit("init error=a table for an unknown id");
        return 0;
    }
    for (m = 1; m <= 6; ++m) {
        table_t t = 0;
        unsigned int size = 0, i;
        size_t len = strlen(sizes);
        if (!cb->GetModuleFunctionTable(m, &t, &size) || !t) {
            emit("init error=no table for module %d", m);
            return 0;
        }
        if (size != expected_sizes[m] || t[0] || t[size]) {
            emit("init error=module %d table size %u or its null ends", m, size);
            return 0;
        }
        for (i = 1; i < size; ++i) {
            if (!t[i] || *t[i]) {
                emit("init error=module %d slot %u missing or not empty", m, i);
                return 0;
            }
        }
        snprintf(sizes + len, sizeof sizes - len, "%s%d:%u", m > 1 ? "," : "", m, size);
    }
    if (cb->GetModuleFunctionTable(7, &core, &core_size)) {
        emit("init error=a table for an unknown module");
        return 0;
    }
    vi->SetInjectionNvtxVersion(3);
    emit("init version=%u sizes=%s", vi->version, sizes);

    cb->GetModuleFunctionTable(1, &core, &core_size);
    /* NvtxCallbackIdCore */
    *core[2] = (fnptr_t)mark_a;
    *core[5] = (fnptr_t)start_a;
    *core[7] = (fnptr_t)end;
    *core[9] = (fnptr_t)push_a;
    *core[11] = (fnptr_t)pop;
    *core[12] = (fnptr_t)name_category;
    *core[14] = (fnptr_t)name_thread;
    if (!getenv("FAKE_NVTX_ONLY_A")) {
        *core[1] = (fnptr_t)mark_ex;
        *core[4] = (fnptr_t)start_ex;
        *core[8] = (fnptr_t)push_ex;
    }
    if (getenv("FAKE_NVTX_FAIL")) {
        emit("init declined");
        return 0;
    }
    return 1;
}
