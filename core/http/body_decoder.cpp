#include "core/http/body_decoder.h"

#include <algorithm>

namespace sw::http {

namespace {
constexpr qsizetype kMaxSizeDigits = 15; // 15 hex digits fit a qint64; more would overflow it

// 1 to 15 hex digits, nothing else: no sign, no "0x", no spaces inside.
qint64 chunkSize(QByteArrayView text) {
    if (text.isEmpty() || text.size() > kMaxSizeDigits)
        return -1;
    qint64 size = 0;
    for (const char c : text) {
        int digit = -1;
        if (c >= '0' && c <= '9')
            digit = c - '0';
        else if (c >= 'a' && c <= 'f')
            digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            digit = c - 'A' + 10;
        if (digit < 0)
            return -1;
        size = size * 16 + digit;
    }
    return size;
}
} // namespace

void BodyDecoder::start(Framing framing, qint64 length, const Limits &limits) {
    m_framing = framing;
    m_limits = limits;
    m_remaining = framing == Framing::Length ? length : 0;
    m_decoded = 0;
    m_announced = 0;
    m_step = ChunkStep::Size;
    m_line.clear();
    m_sawCr = false;
    m_trailerBytes = 0;
    m_error.clear();
    const bool empty = framing == Framing::None || (framing == Framing::Length && length <= 0);
    m_status = empty ? Status::Done : Status::Reading;
}

void BodyDecoder::fail(Status status, const QString &why) {
    m_status = status;
    m_error = why;
    m_line.clear();
}

bool BodyDecoder::finishOnClose() {
    if (m_status == Status::Reading && m_framing == Framing::UntilClose)
        m_status = Status::Done;
    return m_status == Status::Done;
}

qsizetype BodyDecoder::feed(QByteArrayView bytes, QByteArray *body) {
    if (m_status != Status::Reading)
        return 0;
    switch (m_framing) {
    case Framing::None:
        return 0;
    case Framing::UntilClose:
        if (body)
            body->append(bytes.data(), bytes.size());
        m_decoded += bytes.size();
        return bytes.size();
    case Framing::Length: {
        const qsizetype take = qsizetype(std::min<qint64>(m_remaining, bytes.size()));
        if (body)
            body->append(bytes.data(), take);
        m_decoded += take;
        m_remaining -= take;
        if (m_remaining == 0)
            m_status = Status::Done;
        return take;
    }
    case Framing::Chunked:
        return feedChunked(bytes, body);
    }
    return 0;
}

bool BodyDecoder::takeLine(QByteArrayView bytes, qsizetype &pos, const char *what, QByteArrayView *line) {
    const qsizetype eol = bytes.indexOf('\n', pos);
    const qsizetype end = eol < 0 ? bytes.size() : eol;
    if (m_line.size() + (end - pos) > m_limits.maxLineBytes) {
        fail(Status::TooLarge,
             QStringLiteral("%1 longer than %2 bytes").arg(QLatin1String(what)).arg(m_limits.maxLineBytes));
        return false;
    }
    if (eol >= 0 && m_line.isEmpty()) {
        // The whole line is in these bytes (the usual case): read it where it lies.
        *line = bytes.sliced(pos, eol - pos);
    } else {
        m_line.append(bytes.data() + pos, end - pos);
        if (eol < 0) {
            pos = bytes.size();
            return false;
        }
        *line = m_line;
    }
    pos = eol + 1;
    if (line->endsWith('\r')) {
        line->chop(1);
    } else if (m_limits.crlfOnly) {
        fail(Status::Malformed, QStringLiteral("%1 ends in a bare LF").arg(QLatin1String(what)));
        return false;
    }
    return true;
}

bool BodyDecoder::sizeLine(QByteArrayView line) {
    QByteArrayView text = line;
    if (const qsizetype semi = text.indexOf(';'); semi >= 0)
        text = text.first(semi); // chunk extensions are ignored
    const qint64 size = chunkSize(text.trimmed());
    m_line.clear();
    if (size < 0) {
        fail(Status::Malformed, QStringLiteral("malformed chunk size"));
        return false;
    }
    if (m_limits.maxBodyBytes >= 0 && size > m_limits.maxBodyBytes - m_announced) {
        fail(Status::BodyTooLarge, QStringLiteral("chunked body over %1 bytes").arg(m_limits.maxBodyBytes));
        return false;
    }
    m_announced += size;
    m_remaining = size;
    m_step = size == 0 ? ChunkStep::Trailer : ChunkStep::Data;
    return true;
}

qsizetype BodyDecoder::feedChunked(QByteArrayView bytes, QByteArray *body) {
    qsizetype pos = 0;
    while (m_status == Status::Reading && pos < bytes.size()) {
        switch (m_step) {
        case ChunkStep::Size: {
            QByteArrayView line;
            if (takeLine(bytes, pos, "chunk size line", &line) && !sizeLine(line))
                return pos;
            break;
        }
        case ChunkStep::Data: {
            const qsizetype take = qsizetype(std::min<qint64>(m_remaining, bytes.size() - pos));
            if (body)
                body->append(bytes.data() + pos, take);
            pos += take;
            m_decoded += take;
            m_remaining -= take;
            if (m_remaining == 0) {
                m_step = ChunkStep::DataEnd;
                m_sawCr = false;
            }
            break;
        }
        case ChunkStep::DataEnd: {
            // CRLF, or a bare LF, after the chunk's data; anything else is the size lying.
            const char c = bytes.at(pos++);
            if (c == '\r' && !m_sawCr) {
                m_sawCr = true;
            } else if (c == '\n' && (m_sawCr || !m_limits.crlfOnly)) {
                m_step = ChunkStep::Size;
            } else {
                fail(Status::Malformed, QStringLiteral("malformed chunk end"));
                return pos;
            }
            break;
        }
        case ChunkStep::Trailer: {
            const qsizetype before = pos;
            QByteArrayView line;
            const bool complete = takeLine(bytes, pos, "trailer line", &line);
            if (m_status != Status::Reading)
                return pos;
            m_trailerBytes += pos - before;
            if (m_trailerBytes > m_limits.maxTrailerBytes) {
                fail(Status::TooLarge, QStringLiteral("trailers longer than %1 bytes").arg(m_limits.maxTrailerBytes));
                return pos;
            }
            if (!complete)
                break;
            if (line.isEmpty()) {
                m_line.clear();
                m_status = Status::Done;
                return pos;
            }
            if (!m_limits.trailers) {
                fail(Status::TrailerRefused, QStringLiteral("trailer fields are not accepted"));
                return pos;
            }
            m_line.clear();
            break;
        }
        }
    }
    return pos;
}

} // namespace sw::http
