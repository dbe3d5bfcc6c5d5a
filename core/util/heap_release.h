#pragma once
// Gives the process allocator's free memory back to the system. A request with a body of many
// megabytes decodes into a few hundred megabytes of small blocks; once it is done they are free but
// stay cached in the allocator, so the gateway would keep that resident set for the rest of its
// life. Called on the thread whose blocks they were (the engine's), when no request body or
// answer is held any more (core/engine.cpp).

namespace sw::util {

// mimalloc's mi_collect(true) when the executable links mimalloc (every Switchman executable but
// the sanitizer and fuzz builds), else glibc's malloc_trim(0). Walks the calling thread's heap:
// milliseconds for a heap of hundreds of megabytes, so not for every request.
void releaseFreeHeap();

} // namespace sw::util
