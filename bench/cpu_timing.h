#pragma once
// Thread CPU time per call, for the micro-benchmarks: a busy machine changes it less than
// wall time does.

#include <QtGlobal>

#include <functional>
#include <time.h>

namespace sw::bench {

inline qint64 threadCpuNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Mean CPU microseconds of one call, over `n` calls after a warm-up.
inline double perCallUs(int n, const std::function<void()> &fn) {
    for (int i = 0; i < n / 10 + 1; ++i)
        fn();
    const qint64 start = threadCpuNs();
    for (int i = 0; i < n; ++i)
        fn();
    return double(threadCpuNs() - start) / 1000.0 / n;
}

} // namespace sw::bench
