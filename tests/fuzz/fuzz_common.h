#pragma once
// Shared by the fuzz targets: each file defines LLVMFuzzerTestOneInput. Under
// clang with -fsanitize=fuzzer libFuzzer drives it (scripts/fuzz); in the
// normal build replay_main.cpp feeds it every file of the target's corpus, so
// ctest replays every crash or slow input ever found.

#include <QByteArray>
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace sw::fuzz {

inline QByteArray bytes(const uint8_t *data, size_t size) {
    return QByteArray(reinterpret_cast<const char *>(data), qsizetype(size));
}

// Splits the input at boundaries chosen by its first byte, so incremental
// parsers see arbitrary chunking as well as arbitrary content.
template <typename Feed> void feedInChunks(const QByteArray &input, Feed &&feed) {
    if (input.isEmpty()) {
        feed(QByteArrayView());
        return;
    }
    const int step = 1 + (static_cast<unsigned char>(input.at(0)) % 64);
    const QByteArrayView rest = QByteArrayView(input).sliced(1);
    for (qsizetype at = 0; at < rest.size(); at += step)
        feed(rest.sliced(at, std::min<qsizetype>(step, rest.size() - at)));
}

} // namespace sw::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
