#include "core/util/heap_release.h"

#include <malloc.h>

// Weak: core links no allocator; an executable that links mimalloc defines it (CMakeLists.txt,
// switchman_allocator), and without it the address is null.
extern "C" void mi_collect(bool force) __attribute__((weak));

namespace sw::util {

void releaseFreeHeap() {
    if (mi_collect) {
        // The first pass returns the heap's empty pages to their segments; the segments it empties
        // go back to the system only on the next (measured after a 16 MiB conversation: 270 MB
        // resident, 99 MB after one pass, 66 MB after two, with 32 MB before the request).
        mi_collect(true);
        mi_collect(true);
    } else {
        malloc_trim(0);
    }
}

} // namespace sw::util
