// Http1ResponseParser: what SocketTransport reports must not depend on how the
// response bytes were split, and badly framed responses must not pass as good.
#include "core/upstream/http1_response_parser.h"

#include <QRandomGenerator>
#include <QTest>

using sw::upstream::Http1ResponseParser;
using State = Http1ResponseParser::State;

namespace {

struct Parsed {
    int status = 0;
    QByteArray body;
    int headEvents = 0;
    bool done = false;
    bool keepAlive = false;
    QByteArray leftover;
    State state = State::Head;
};

Parsed parse(const QByteArray &bytes, const QList<qsizetype> &cuts, bool close = false) {
    Http1ResponseParser p;
    Parsed r;
    qsizetype pos = 0;
    auto feed = [&](QByteArrayView v) {
        const auto out = p.feed(v);
        r.headEvents += out.headComplete ? 1 : 0;
        r.body += out.body;
        r.done |= out.done;
    };
    for (qsizetype c : cuts) {
        feed(QByteArrayView(bytes).sliced(pos, c - pos));
        pos = c;
    }
    feed(QByteArrayView(bytes).sliced(pos));
    if (close)
        r.done |= p.finishOnClose();
    r.status = p.status();
    r.keepAlive = p.keepAlive();
    r.leftover = p.leftover();
    r.state = p.state();
    return r;
}

} // namespace

class TestHttp1ResponseParser : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void anySplitGivesTheSameResponse_data();
    void anySplitGivesTheSameResponse();
    void closeDelimitedBodyEndsOnlyOnClose();
    void truncatedLengthBodyIsNotDone();
    void malformedResponsesAreErrors_data();
    void malformedResponsesAreErrors();
    void identityEncodingIsRead();
    void aFoldedLineContinuesTheFieldBeforeIt();
    void anAnswerItCannotReadKeepsItsStatus_data();
    void anAnswerItCannotReadKeepsItsStatus();
    void transferCodingsBeforeChunkedAreNamed();
    void pipelinedBytesAreLeftOver();
    void endlessLinesAndHeadsAreTooLarge_data();
    void endlessLinesAndHeadsAreTooLarge();
};

void TestHttp1ResponseParser::anySplitGivesTheSameResponse_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<int>("status");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<bool>("keepAlive");
    QTest::newRow("content-length") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") << 200
                                    << QByteArray("hello") << true;
    QTest::newRow("chunked with extension and trailer")
        << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n "
                      "world\r\n0\r\nX-T: 1\r\n\r\n")
        << 200 << QByteArray("hello world") << true;
    QTest::newRow("100 continue skipped")
        << QByteArray(
               "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}")
        << 429 << QByteArray("{}") << true;
    // No chat request is answered so; a body it says it lacks may follow later, onto the next
    // request of a pooled connection (probe E3 1): the connection is not reused.
    QTest::newRow("204 has no body") << QByteArray("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n") << 204
                                     << QByteArray() << false;
    QTest::newRow("304 has no body") << QByteArray("HTTP/1.1 304 Not Modified\r\n\r\n") << 304 << QByteArray() << false;
    // The same length said twice, or as a list, is one length (RFC 9112 6.3).
    QTest::newRow("content-length repeated")
        << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5, 05\r\n\r\nhello") << 200
        << QByteArray("hello") << true;
    QTest::newRow("connection close") << QByteArray("HTTP/1.1 500 E\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx")
                                      << 500 << QByteArray("x") << false;
    QTest::newRow("HTTP/1.0 defaults to close")
        << QByteArray("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\ny") << 200 << QByteArray("y") << false;
    QTest::newRow("uppercase hex chunk size")
        << QByteArray("HTTP/1.1 200 OK\r\ntransfer-encoding: CHUNKED\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n") << 200
        << QByteArray("0123456789") << true;
    // RFC 9112 lets a recipient take a bare LF as a line end; some servers send only that.
    QTest::newRow("LF-only head") << QByteArray("HTTP/1.1 200 OK\nContent-Length: 5\n\nhello") << 200
                                  << QByteArray("hello") << true;
    QTest::newRow("LF-only chunked with trailer")
        << QByteArray("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n5\nhello\n0\nX-T: 1\n\n") << 200
        << QByteArray("hello") << true;
    QTest::newRow("mixed line ends") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok") << 200
                                     << QByteArray("ok") << true;
    // Both framings: the chunks decide, and a connection whose answer was framed twice is not reused.
    QTest::newRow("chunked and a content-length")
        << QByteArray(
               "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        << 200 << QByteArray("hello") << false;
    QTest::newRow("chunked after another coding")
        << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n") << 200
        << QByteArray("ok") << true;
    QTest::newRow("head just under the limit")
        << QByteArray("HTTP/1.1 200 OK\r\nX-Pad: " + QByteArray(Http1ResponseParser::kMaxHeadBytes - 64, 'p') +
                      "\r\nContent-Length: 1\r\n\r\nz")
        << 200 << QByteArray("z") << true;
}

void TestHttp1ResponseParser::anySplitGivesTheSameResponse() {
    QFETCH(QByteArray, bytes);
    QFETCH(int, status);
    QFETCH(QByteArray, body);
    QFETCH(bool, keepAlive);
    auto check = [&](const QList<qsizetype> &cuts) {
        const Parsed r = parse(bytes, cuts);
        QCOMPARE(r.state, State::Done);
        QVERIFY(r.done);
        QCOMPARE(r.headEvents, 1);
        QCOMPARE(r.status, status);
        QCOMPARE(r.body, body);
        QCOMPARE(r.keepAlive, keepAlive);
        QVERIFY(r.leftover.isEmpty());
    };
    check({});
    QList<qsizetype> every;
    for (qsizetype i = 1; i < bytes.size(); ++i)
        every << i;
    check(every);
    QRandomGenerator rng(42);
    for (int round = 0; round < 100; ++round) {
        QList<qsizetype> cuts;
        for (qsizetype i = 1; i < bytes.size(); ++i)
            if (rng.bounded(5) == 0)
                cuts << i;
        check(cuts);
        if (QTest::currentTestFailed())
            return;
    }
}

void TestHttp1ResponseParser::closeDelimitedBodyEndsOnlyOnClose() {
    const QByteArray bytes = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\n";
    Parsed open = parse(bytes, {});
    QCOMPARE(open.state, State::Body);
    QVERIFY(!open.done);
    QCOMPARE(open.body, QByteArray("data: a\n\n"));
    QVERIFY(!open.keepAlive);
    QVERIFY(parse(bytes, {}, true).done);

    // A transfer coding that does not end in chunked is read to the close too, its Content-Length ignored
    // (an error answer's: a 2xx in a coding is an answer this parser does not read).
    const QByteArray coded =
        "HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked, x-custom\r\nContent-Length: 2\r\n\r\nabcdef";
    Parsed codedOpen = parse(coded, {});
    QCOMPARE(codedOpen.state, State::Body);
    QCOMPARE(codedOpen.body, QByteArray("abcdef"));
    QVERIFY(!codedOpen.keepAlive);
}

void TestHttp1ResponseParser::truncatedLengthBodyIsNotDone() {
    const Parsed r = parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", {}, true);
    QVERIFY(!r.done);
    QCOMPARE(r.body, QByteArray("abc"));
    const Parsed c = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", {}, true);
    QVERIFY(!c.done); // no terminating zero chunk
}

void TestHttp1ResponseParser::malformedResponsesAreErrors_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::newRow("not http") << QByteArray("SSH-2.0-OpenSSH\r\n\r\n");
    QTest::newRow("bad status") << QByteArray("HTTP/1.1 abc OK\r\n\r\n");
    QTest::newRow("bad length") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n");
    QTest::newRow("bad chunk size") << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    QTest::newRow("chunk overrun") << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n");
    QTest::newRow("chunk size beyond 64 bits")
        << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000000\r\n");
    // Asked for identity; a compressed body read as SSE text would look like a stream cut short.
    QTest::newRow("gzip body") << QByteArray("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                             "Content-Encoding: gzip\r\n\r\n\x1f\x8b\x08");
    // Nothing asks for an upgrade: a server that switches protocols anyway is not answering (its bytes were
    // read as the answer and stopped the chain, probe C1 2).
    // Lengths that disagree: read by the first, the rest of the body waited on the pooled connection
    // and became another tenant's answer (probe E3 1). RFC 9112 6.3: an error, the connection closed.
    QTest::newRow("content-lengths disagree")
        << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 120\r\n\r\n{}");
    QTest::newRow("content-length list disagrees") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 2, 120\r\n\r\n{}");
    // Lines ended by a bare CR: the head's "end" was found in the body, and the headers and the
    // first event read as one start line made a 200 missing its first words (probe T2 F4).
    QTest::newRow("bare CR line ends") << QByteArray(
        "HTTP/1.1 200 OK\rContent-Type: text/event-stream\r\rdata: {\"a\":1}\n\ndata: {}\n\n");
    QTest::newRow("bare CR in a field") << QByteArray("HTTP/1.1 200 OK\r\nX-A: b\rc\r\nContent-Length: 2\r\n\r\nok");
    QTest::newRow("gzip transfer coding") << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                                                        "3\r\n\x1f\x8b\x08\r\n0\r\n\r\n");
    QTest::newRow("HTTP/2 status line") << QByteArray("HTTP/2 200\r\ncontent-length: 2\r\n\r\n{}");
    QTest::newRow("switching protocols") << QByteArray("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n"
                                                       "Connection: Upgrade\r\n\r\ndata: {}\n\n");
}

void TestHttp1ResponseParser::malformedResponsesAreErrors() {
    QFETCH(QByteArray, bytes);
    Http1ResponseParser p;
    p.feed(bytes);
    QCOMPARE(p.state(), State::Error);
    QCOMPARE(p.failure(), Http1ResponseParser::Failure::Malformed);
    if (QByteArray(QTest::currentDataTag()) == "switching protocols")
        QVERIFY2(p.errorString().contains(QStringLiteral("101")), qPrintable(p.errorString()));
    if (QByteArray(QTest::currentDataTag()) == "gzip body")
        QVERIFY2(p.errorString().contains(QStringLiteral("Content-Encoding gzip")), qPrintable(p.errorString()));
}

void TestHttp1ResponseParser::identityEncodingIsRead() {
    Http1ResponseParser p;
    const auto out = p.feed("HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Length: 2\r\n\r\nok");
    QCOMPARE(p.state(), State::Done);
    QCOMPARE(out.body, QByteArray("ok"));
    // "none" says the same, in words no registry has (probe C1 3: the whole host was marked unreachable).
    Http1ResponseParser none;
    const auto plain = none.feed("HTTP/1.1 200 OK\r\nContent-Encoding: None\r\nContent-Length: 2\r\n\r\nok");
    QCOMPARE(none.state(), State::Done);
    QCOMPARE(plain.body, QByteArray("ok"));
}

void TestHttp1ResponseParser::aFoldedLineContinuesTheFieldBeforeIt() {
    // obs-fold (RFC 9112 5.2): a client replaces it with a space. Read as fields of their own, these
    // lines made a good answer "compressed", or its lengths disagree (probe T2 F2).
    Http1ResponseParser p;
    const auto out = p.feed("HTTP/1.1 200 OK\r\nX-Note: a\r\n Content-Encoding: gzip\r\nContent-Length: 2\r\n"
                            "X-Other: b\r\n\tContent-Length: 7\r\n\r\nok");
    QCOMPARE(p.state(), State::Done);
    QCOMPARE(out.body, QByteArray("ok"));
    QCOMPARE(sw::http::headerValue(p.headers(), "x-note"), QByteArray("a Content-Encoding: gzip"));
    QCOMPARE(sw::http::headerValue(p.headers(), "x-other"), QByteArray("b Content-Length: 7"));
    QCOMPARE(p.headers().size(), 3);
    // A whitespace line before the first field continues nothing: dropped.
    Http1ResponseParser first;
    const auto ok = first.feed("HTTP/1.1 200 OK\r\n Content-Length: 9\r\nContent-Length: 2\r\n\r\nok");
    QCOMPARE(first.state(), State::Done);
    QCOMPARE(ok.body, QByteArray("ok"));
}

void TestHttp1ResponseParser::anAnswerItCannotReadKeepsItsStatus_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<int>("status");
    QTest::addColumn<bool>("answered");
    QTest::newRow("gzip content coding") << QByteArray("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n\x1f\x8b")
                                         << 200 << true;
    QTest::newRow("gzip transfer coding")
        << QByteArray("HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b") << 201 << true;
    QTest::newRow("lengths disagree") << QByteArray(
                                             "HTTP/1.1 503 Busy\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n")
                                      << 503 << true;
    QTest::newRow("HTTP/2") << QByteArray("HTTP/2 200\r\n\r\n") << 200 << true;
    QTest::newRow("HTTP/2 interim") << QByteArray("HTTP/2 100\r\n\r\n") << 0 << false;
    QTest::newRow("garbage") << QByteArray("SMTP READY\r\n\r\n") << 0 << false;
    QTest::newRow("bad chunk") << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n") << 200
                               << false;
}

void TestHttp1ResponseParser::anAnswerItCannotReadKeepsItsStatus() {
    // The server answered, in a form this parser does not read: its status is heard (the attempt
    // tells the client it answered, and does not ask it again), unlike bytes that are no answer.
    QFETCH(QByteArray, bytes);
    QFETCH(int, status);
    QFETCH(bool, answered);
    Http1ResponseParser p;
    p.feed(bytes);
    QCOMPARE(p.state(), State::Error);
    QCOMPARE(p.answered(), answered);
    QCOMPARE(p.status(), status);
}

void TestHttp1ResponseParser::transferCodingsBeforeChunkedAreNamed() {
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked("chunked").toByteArray(), QByteArray());
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked(" Chunked ").toByteArray(), QByteArray());
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked("identity").toByteArray(), QByteArray());
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked("gzip, chunked").toByteArray(), QByteArray("gzip"));
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked("gzip,chunked").toByteArray(), QByteArray("gzip"));
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked("deflate").toByteArray(), QByteArray("deflate"));
    QCOMPARE(Http1ResponseParser::transferCodingsBeforeChunked("xchunked").toByteArray(), QByteArray("xchunked"));
}

void TestHttp1ResponseParser::endlessLinesAndHeadsAreTooLarge_data() {
    QTest::addColumn<QByteArray>("start");
    QTest::addColumn<QByteArray>("piece");
    const QByteArray chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    QTest::newRow("status line") << QByteArray("HTTP/1.1 200 ") << QByteArray("O");
    QTest::newRow("header line") << QByteArray("HTTP/1.1 200 OK\r\nX: ") << QByteArray("x");
    QTest::newRow("many headers") << QByteArray("HTTP/1.1 200 OK\r\n") << QByteArray("X-Pad: 0123456789\r\n");
    QTest::newRow("chunk size line") << chunked + "1" << QByteArray("0");
    QTest::newRow("chunk extension") << chunked + "1;e=" << QByteArray("e");
    QTest::newRow("trailer line") << chunked + "0\r\nX-T: " << QByteArray("t");
    QTest::newRow("many trailers") << chunked + "0\r\n" << QByteArray("X-T: 0123456789\r\n");
}

void TestHttp1ResponseParser::endlessLinesAndHeadsAreTooLarge() {
    QFETCH(QByteArray, start);
    QFETCH(QByteArray, piece);
    Http1ResponseParser p;
    p.feed(start);
    const QByteArray block = piece.repeated(4096 / piece.size() + 1);
    qsizetype fed = start.size();
    // The failure must come within one block of the limit, however the bytes are split.
    while (p.state() != State::Error && fed < 4 * Http1ResponseParser::kMaxHeadBytes) {
        p.feed(block);
        fed += block.size();
    }
    QCOMPARE(p.state(), State::Error);
    QCOMPARE(p.failure(), Http1ResponseParser::Failure::TooLarge);
    QVERIFY2(fed <= Http1ResponseParser::kMaxHeadBytes + 2 * block.size(), qPrintable(QString::number(fed)));
    QVERIFY(p.leftover().isEmpty()); // nothing is held after the failure
    p.feed(block);
    QVERIFY(p.leftover().isEmpty());
}

void TestHttp1ResponseParser::pipelinedBytesAreLeftOver() {
    const Parsed r = parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200", {});
    QVERIFY(r.done);
    QCOMPARE(r.leftover, QByteArray("HTTP/1.1 200"));
}

QTEST_APPLESS_MAIN(TestHttp1ResponseParser)
#include "test_http1_response_parser.moc"
