// An LD_PRELOAD library that shows a process what it sees on waking from a suspend, for
// tests/app/test_machine_sleep: CLOCK_BOOTTIME and the wall clock have moved on by the time the
// machine slept, CLOCK_MONOTONIC (which stands still while the machine is suspended) has not. The
// test writes the milliseconds slept so far, 8 bytes in host order, to the file that
// SWITCHMAN_TEST_SLEPT_MS_FILE names; the process reads them through a shared mapping on every
// clock read, so a write takes effect at once.

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

using ClockGettime = int (*)(clockid_t, timespec *);

// Found on first use, not in a function-local static: the allocator may read the clock while the
// process starts, and a static's guard would deadlock on that re-entry. Two threads racing here
// find the same function and map the same file.
std::atomic<ClockGettime> g_real{nullptr};
std::atomic<const volatile std::int64_t *> g_sleptMs{nullptr};
std::atomic<bool> g_mapped{false};

ClockGettime realClockGettime() {
    ClockGettime f = g_real.load(std::memory_order_acquire);
    if (!f) {
        f = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
        g_real.store(f, std::memory_order_release);
    }
    return f;
}

std::int64_t sleptMs() {
    if (!g_mapped.exchange(true)) {
        if (const char *path = std::getenv("SWITCHMAN_TEST_SLEPT_MS_FILE")) {
            const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                void *m = ::mmap(nullptr, sizeof(std::int64_t), PROT_READ, MAP_SHARED, fd, 0);
                if (m != MAP_FAILED)
                    g_sleptMs.store(static_cast<const volatile std::int64_t *>(m), std::memory_order_release);
                ::close(fd);
            }
        }
    }
    const volatile std::int64_t *slept = g_sleptMs.load(std::memory_order_acquire);
    return slept ? *slept : 0;
}

bool countsSleep(clockid_t id) {
    return id == CLOCK_BOOTTIME || id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

} // namespace

extern "C" int clock_gettime(clockid_t id, timespec *ts) noexcept {
    const int r = realClockGettime()(id, ts);
    if (r == 0 && countsSleep(id)) {
        const std::int64_t ns = std::int64_t(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec + sleptMs() * 1'000'000;
        ts->tv_sec = time_t(ns / 1'000'000'000);
        ts->tv_nsec = long(ns % 1'000'000'000);
    }
    return r;
}

extern "C" int gettimeofday(timeval *__restrict tv, void *__restrict) noexcept {
    timespec ts{};
    const int r = clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = suseconds_t(ts.tv_nsec / 1000);
    return r;
}

extern "C" time_t time(time_t *t) noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
