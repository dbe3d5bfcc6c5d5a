// core/http: the one head parser and the one body decoder that the listener's
// guard, the upstream response parser and the fake upstream all read HTTP/1 with.
#include "core/http/body_decoder.h"
#include "core/http/head_parser.h"
#include "core/http/headers.h"

#include <QRandomGenerator>
#include <QTest>

using sw::http::BodyDecoder;
using sw::http::BodyLimits;
using sw::http::HeadParser;

namespace {
// Feeds `message` to a fresh parser in growing prefixes cut at `cuts`, as bytes arrive.
HeadParser::Status parseInPieces(HeadParser &p, const QByteArray &message, const QList<qsizetype> &cuts) {
    HeadParser::Status s = HeadParser::Status::Incomplete;
    for (const qsizetype cut : cuts) {
        s = p.parse(QByteArrayView(message).first(cut));
        if (s != HeadParser::Status::Incomplete)
            return s;
    }
    return p.parse(message);
}

struct Decoded {
    BodyDecoder::Status status = BodyDecoder::Status::Reading;
    QByteArray body;
    qsizetype consumed = 0;
    bool tookEveryByteWhileReading = true; // a body still reading takes every byte it is given
};

Decoded decode(BodyDecoder::Framing framing, qint64 length, const QByteArray &bytes, const QList<qsizetype> &cuts,
               const BodyLimits &limits = BodyLimits()) {
    BodyDecoder d;
    d.start(framing, length, limits);
    Decoded out;
    qsizetype from = 0;
    QList<qsizetype> ends = cuts;
    ends << bytes.size();
    for (const qsizetype to : ends) {
        const QByteArrayView piece = QByteArrayView(bytes).sliced(from, to - from);
        const qsizetype used = d.feed(piece, &out.body);
        out.consumed += used;
        from = to;
        if (d.status() != BodyDecoder::Status::Reading)
            break;
        out.tookEveryByteWhileReading = out.tookEveryByteWhileReading && used == piece.size();
    }
    out.status = d.status();
    return out;
}

QList<QList<qsizetype>> splits(qsizetype size) {
    QList<QList<qsizetype>> all{{}};
    QList<qsizetype> every;
    for (qsizetype i = 1; i < size; ++i)
        every << i;
    all << every;
    QRandomGenerator rng(7);
    for (int round = 0; round < 50; ++round) {
        QList<qsizetype> cuts;
        for (qsizetype i = 1; i < size; ++i)
            if (rng.bounded(4) == 0)
                cuts << i;
        all << cuts;
    }
    return all;
}
} // namespace

class TestHttpFraming : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void headerNamesAreRfcTokens() {
        // RFC 9110 5.1 / 5.6.2: a field name is a token; every byte, alone and inside a name.
        const QByteArray tchar = "!#$%&'*+-.^_`|~";
        for (int b = 0; b < 256; ++b) {
            const char c = char(b);
            const bool expected = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                  (b != 0 && tchar.contains(c));
            QCOMPARE(sw::http::isToken(QByteArray(1, c)), expected);
            QCOMPARE(sw::http::isToken("x-" + QByteArray(1, c) + "-name"), expected);
        }
        QVERIFY(!sw::http::isToken(""));
        QVERIFY(sw::http::isToken("x-stainless-package-version"));
        QVERIFY(!sw::http::isToken("content type"));
        QVERIFY(!sw::http::isToken("x-a:b"));
    }
    void headsParseWhateverTheLineEnds_data() {
        QTest::addColumn<QByteArray>("message");
        QTest::addColumn<qsizetype>("headBytes");
        const QByteArray crlf = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A:  spaced value \r\n\r\nok";
        QTest::newRow("CRLF") << crlf << crlf.indexOf("ok");
        const QByteArray lf = "HTTP/1.1 200 OK\nContent-Length: 2\nX-A:  spaced value \n\nok";
        QTest::newRow("LF only") << lf << lf.indexOf("ok");
        const QByteArray mixed = "HTTP/1.1 200 OK\r\nContent-Length: 2\nX-A:  spaced value \n\r\nok";
        QTest::newRow("mixed") << mixed << mixed.indexOf("ok");
    }
    void headsParseWhateverTheLineEnds() {
        QFETCH(QByteArray, message);
        QFETCH(qsizetype, headBytes);
        for (const auto &cuts : splits(message.size())) {
            HeadParser p(1024, HeadParser::FieldLines::Refuse);
            QCOMPARE(parseInPieces(p, message, cuts), HeadParser::Status::Complete);
            QCOMPARE(p.headBytes(), headBytes);
            QCOMPARE(p.startLine(), QByteArray("HTTP/1.1 200 OK"));
            QCOMPARE(p.headers().size(), 2);
            QCOMPARE(sw::http::headerValue(p.headers(), "content-length"), QByteArray("2"));
            QCOMPARE(sw::http::headerValue(p.headers(), "X-A"), QByteArray("spaced value"));
        }
    }
    void headLimitCountsTheEmptyLine() {
        const QByteArray head = "GET / HTTP/1.1\r\nX-Pad: " + QByteArray(100, 'p') + "\r\n\r\n";
        HeadParser exact(head.size(), HeadParser::FieldLines::Refuse);
        QCOMPARE(exact.parse(head + "body"), HeadParser::Status::Complete);
        HeadParser under(head.size() - 1, HeadParser::FieldLines::Refuse);
        QCOMPARE(under.parse(head), HeadParser::Status::TooLarge);
        // No end in sight: refused as soon as more than the limit is held, not later.
        HeadParser endless(64, HeadParser::FieldLines::Skip);
        QByteArray growing = "HTTP/1.1 200 OK\r\nX: ";
        while (growing.size() <= 64) {
            QCOMPARE(endless.parse(growing), HeadParser::Status::Incomplete);
            growing += 'x';
        }
        QCOMPARE(endless.parse(growing), HeadParser::Status::TooLarge);
    }
    void malformedFieldLinesAreRefusedOrSkipped_data() {
        QTest::addColumn<QByteArray>("line");
        QTest::newRow("no colon") << QByteArray("Just words");
        QTest::newRow("space before colon") << QByteArray("Host : a");
        QTest::newRow("obs-fold") << QByteArray(" continued");
        QTest::newRow("empty name") << QByteArray(": v");
        QTest::newRow("separator in name") << QByteArray("A(b): v");
    }
    void malformedFieldLinesAreRefusedOrSkipped() {
        QFETCH(QByteArray, line);
        const QByteArray message = "GET / HTTP/1.1\r\nHost: a\r\n" + line + "\r\n\r\n";
        HeadParser strict(1024, HeadParser::FieldLines::Refuse);
        QCOMPARE(strict.parse(message), HeadParser::Status::Malformed);
        HeadParser lenient(1024, HeadParser::FieldLines::Skip);
        QCOMPARE(lenient.parse(message), HeadParser::Status::Complete);
        // A fold continues the field before it, joined by a space (RFC 9112 5.2); other lines are skipped.
        QCOMPARE(sw::http::headerValue(lenient.headers(), "host"),
                 QByteArray(QTest::currentDataTag()) == "obs-fold" ? QByteArray("a continued") : QByteArray("a"));
    }
    void resetReadsTheNextHead() {
        HeadParser p(1024, HeadParser::FieldLines::Skip);
        QCOMPARE(p.parse("HTTP/1.1 100 Continue\r\n\r\n"), HeadParser::Status::Complete);
        p.reset();
        QCOMPARE(p.parse("HTTP/1.1 204 No Content\r\nA: 1\r\n\r\n"), HeadParser::Status::Complete);
        QCOMPARE(p.startLine(), QByteArray("HTTP/1.1 204 No Content"));
        QCOMPARE(p.headers().size(), 1);
    }

    void fieldsReadInPlaceAreTheHeaders() {
        // What nextField() walks is what headers() holds, name for name, and it reads the
        // parser's own copy: the caller's buffer may change once the head is parsed.
        QByteArray message = "POST /v1 HTTP/1.1\r\nHost:  a.example \r\nnot a field\r\nX-Empty:\r\n"
                             "X-Dup: 1\nx-dup: two words\t\r\n\r\nbody";
        HeadParser p(1024, HeadParser::FieldLines::Skip);
        QCOMPARE(p.parse(message), HeadParser::Status::Complete);
        message.fill('#');
        QList<QPair<QByteArray, QByteArray>> walked;
        QByteArrayView name;
        QByteArrayView value;
        for (qsizetype pos = 0; p.nextField(pos, name, value);)
            walked.append({name.toByteArray(), value.toByteArray()});
        const QList<QPair<QByteArray, QByteArray>> expected{
            {"Host", "a.example"}, {"X-Empty", ""}, {"X-Dup", "1"}, {"x-dup", "two words"}};
        QCOMPARE(walked, expected);
        QCOMPARE(p.headers(), expected);
        QCOMPARE(p.startLine(), QByteArray("POST /v1 HTTP/1.1"));
        // After reset() the next head's fields, never the last one's.
        p.reset();
        qsizetype pos = 0;
        QVERIFY(!p.nextField(pos, name, value)); // nothing parsed yet
        QVERIFY(p.headers().isEmpty());
        QCOMPARE(p.parse("HTTP/1.1 200 OK\r\nA: 1\r\n\r\n"), HeadParser::Status::Complete);
        QCOMPARE(p.headers(), (QList<QPair<QByteArray, QByteArray>>{{"A", "1"}}));
        // A head that is only its start line has no fields.
        HeadParser bare(1024, HeadParser::FieldLines::Refuse);
        QCOMPARE(bare.parse("GET / HTTP/1.1\r\n\r\n"), HeadParser::Status::Complete);
        pos = 0;
        QVERIFY(!bare.nextField(pos, name, value));
        QVERIFY(bare.headers().isEmpty());
    }

    void lengthBodyEndsAtItsLength() {
        for (const auto &cuts : splits(9)) {
            const Decoded d = decode(BodyDecoder::Framing::Length, 5, "helloNEXT", cuts);
            QCOMPARE(d.status, BodyDecoder::Status::Done);
            QCOMPARE(d.body, QByteArray("hello"));
            QCOMPARE(d.consumed, 5); // the rest is the next message's
        }
        BodyDecoder empty;
        empty.start(BodyDecoder::Framing::Length, 0);
        QVERIFY(empty.done());
        QCOMPARE(empty.feed("x"), 0);
    }
    void chunkedBodyDecodesUnderAnySplit_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("CRLF") << QByteArray("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n") << QByteArray("hello world");
        QTest::newRow("extension and trailers")
            << QByteArray("5;name=v\r\nhello\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n") << QByteArray("hello");
        QTest::newRow("LF only") << QByteArray("5\nhello\n0\n\n") << QByteArray("hello");
        QTest::newRow("uppercase hex, padded")
            << QByteArray("00A \r\n0123456789\r\n0\r\n\r\n") << QByteArray("0123456789");
    }
    void chunkedBodyDecodesUnderAnySplit() {
        QFETCH(QByteArray, bytes);
        QFETCH(QByteArray, body);
        const QByteArray next = "GET /next HTTP/1.1\r\n";
        for (const auto &cuts : splits(bytes.size() + next.size())) {
            const Decoded d = decode(BodyDecoder::Framing::Chunked, 0, bytes + next, cuts);
            QCOMPARE(d.status, BodyDecoder::Status::Done);
            QVERIFY(d.tookEveryByteWhileReading);
            QCOMPARE(d.body, body);
            QCOMPARE(d.consumed, bytes.size());
        }
    }
    void malformedChunkedBodies_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::newRow("not hex") << QByteArray("zz\r\n");
        QTest::newRow("empty size") << QByteArray("\r\n");
        QTest::newRow("sign") << QByteArray("+5\r\nhello\r\n0\r\n\r\n");
        QTest::newRow("negative") << QByteArray("-1\r\n");
        QTest::newRow("0x prefix") << QByteArray("0x5\r\nhello\r\n0\r\n\r\n");
        QTest::newRow("space inside") << QByteArray("1 0\r\n");
        QTest::newRow("beyond 64 bits") << QByteArray("1000000000000000000\r\n");
        QTest::newRow("16 digits") << QByteArray("0000000000000005\r\nhello\r\n");
        QTest::newRow("chunk longer than its size") << QByteArray("2\r\nabcd\r\n");
        QTest::newRow("CR then not LF") << QByteArray("2\r\nab\r\r\n");
    }
    void malformedChunkedBodies() {
        QFETCH(QByteArray, bytes);
        for (const auto &cuts : splits(bytes.size())) {
            const Decoded d = decode(BodyDecoder::Framing::Chunked, 0, bytes, cuts);
            QCOMPARE(d.status, BodyDecoder::Status::Malformed);
        }
    }
    void endlessChunkLinesAreTooLarge_data() {
        QTest::addColumn<QByteArray>("start");
        QTest::addColumn<char>("filler");
        QTest::newRow("size line") << QByteArray("1") << '0';
        QTest::newRow("extension") << QByteArray("1;e=") << 'e';
        QTest::newRow("trailer line") << QByteArray("0\r\nX-T: ") << 't';
    }
    void endlessChunkLinesAreTooLarge() {
        QFETCH(QByteArray, start);
        QFETCH(char, filler);
        BodyLimits limits;
        limits.maxLineBytes = 100;
        BodyDecoder d;
        d.start(BodyDecoder::Framing::Chunked, 0, limits);
        d.feed(start);
        qsizetype fed = start.size();
        while (d.status() == BodyDecoder::Status::Reading && fed < 1000) {
            d.feed(QByteArray(1, filler));
            ++fed;
        }
        QCOMPARE(d.status(), BodyDecoder::Status::TooLarge);
        QVERIFY2(fed <= start.indexOf('\n') + 1 + 101, qPrintable(QString::number(fed)));
    }
    void trailersAreBoundedTogether() {
        BodyLimits limits;
        limits.maxTrailerBytes = 50;
        BodyDecoder d;
        d.start(BodyDecoder::Framing::Chunked, 0, limits);
        d.feed("0\r\n");
        for (int i = 0; i < 10 && d.status() == BodyDecoder::Status::Reading; ++i)
            d.feed("X-T: 0123456789\r\n"); // 17 bytes a line, each within the line limit
        QCOMPARE(d.status(), BodyDecoder::Status::TooLarge);
    }
    void bodyLimitRefusesAtTheSizeLine() {
        BodyLimits limits;
        limits.maxBodyBytes = 10;
        BodyDecoder d;
        d.start(BodyDecoder::Framing::Chunked, 0, limits);
        d.feed("6\r\nabcdef\r\n");
        QCOMPARE(d.status(), BodyDecoder::Status::Reading);
        // The second chunk would take the body to 12 bytes: refused before its data arrives.
        d.feed("6\r\n");
        QCOMPARE(d.status(), BodyDecoder::Status::BodyTooLarge);
        BodyDecoder exact;
        exact.start(BodyDecoder::Framing::Chunked, 0, limits);
        exact.feed("6\r\nabcdef\r\n4\r\nghij\r\n0\r\n\r\n");
        QVERIFY(exact.done());
        QCOMPARE(exact.decodedBytes(), 10);
    }
    void trailersCanBeRefused() {
        BodyLimits limits;
        limits.trailers = false;
        QCOMPARE(decode(BodyDecoder::Framing::Chunked, 0, "1\r\na\r\n0\r\nX-T: 1\r\n\r\n", {}, limits).status,
                 BodyDecoder::Status::TrailerRefused);
        QCOMPARE(decode(BodyDecoder::Framing::Chunked, 0, "1\r\na\r\n0\r\n\r\n", {}, limits).status,
                 BodyDecoder::Status::Done);
    }
    void closeDelimitedBodyEndsOnlyOnClose() {
        BodyDecoder d;
        d.start(BodyDecoder::Framing::UntilClose);
        QByteArray body;
        QCOMPARE(d.feed("data: a\n\n", &body), 9);
        QCOMPARE(d.status(), BodyDecoder::Status::Reading);
        QVERIFY(d.finishOnClose());
        QCOMPARE(body, QByteArray("data: a\n\n"));
        BodyDecoder chunked;
        chunked.start(BodyDecoder::Framing::Chunked);
        chunked.feed("3\r\nabc\r\n");
        QVERIFY(!chunked.finishOnClose()); // a chunked body cut short is not complete
    }
    void countingWithoutKeepingTheBytes() {
        BodyDecoder d;
        d.start(BodyDecoder::Framing::Chunked);
        QCOMPARE(d.feed("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nrest"), 20); // "rest" is not this body's
        QVERIFY(d.done());
        QCOMPARE(d.decodedBytes(), 5);
    }
};

QTEST_APPLESS_MAIN(TestHttpFraming)
#include "test_http_framing.moc"
