// QtUpstreamCall over a scripted QNetworkReply: the signal orderings QNAM may
// produce (body before metadata, body left unread at finish, errors mid-body)
// and callers that abort from inside their handlers, deterministically.
#include "core/upstream/qt_upstream_call.h"

#include <QNetworkReply>
#include <QTest>

using namespace sw::upstream;

namespace {

class ScriptedReply final : public QNetworkReply {
public:
    ScriptedReply() {
        open(QIODevice::ReadOnly | QIODevice::Unbuffered);
        setFinished(false);
    }
    void abort() override { ++aborted; }
    qint64 bytesAvailable() const override { return m_data.size() + QNetworkReply::bytesAvailable(); }

    void headers(int status, const HeaderList &h, bool announce = true) {
        setAttribute(QNetworkRequest::HttpStatusCodeAttribute, status);
        for (const auto &p : h)
            setRawHeader(p.first, p.second);
        if (announce)
            Q_EMIT metaDataChanged();
    }
    void data(const QByteArray &d, bool announce = true) {
        m_data += d;
        if (announce)
            Q_EMIT readyRead();
    }
    void finish(NetworkError e = NoError) {
        if (e != NoError)
            setError(e, QStringLiteral("scripted"));
        setFinished(true);
        Q_EMIT finished();
    }
    int aborted = 0;

protected:
    qint64 readData(char *out, qint64 max) override {
        const qint64 n = std::min<qint64>(max, m_data.size());
        memcpy(out, m_data.constData(), size_t(n));
        m_data.remove(0, n);
        return n;
    }

private:
    QByteArray m_data;
};

struct Log {
    QList<QByteArray> order;
    QByteArray body;
    QList<TransportResult> results;
    int status = 0;
    void attach(UpstreamCall *call, QObject *ctx) {
        QObject::connect(call, &UpstreamCall::responseStarted, ctx, [this](int s, const HeaderList &) {
            order << "started";
            status = s;
        });
        QObject::connect(call, &UpstreamCall::bodyData, ctx, [this](const QByteArray &d) {
            order << "data";
            body += d;
        });
        QObject::connect(call, &UpstreamCall::finished, ctx, [this](const TransportResult &r) {
            order << "finished";
            results << r;
        });
    }
};

} // namespace

class TestQtUpstreamCall : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void abortAfterTheHeadLetsAnEndingBodyEnd();
    void abortAfterTheHeadClosesABodyThatGoesOn();
    void bodyBeforeMetadataStillStartsFirst();
    void bodyLeftUnreadAtFinishIsDelivered();
    void errorStatusIsNotATransportError();
    void cutOffMidBodyIsResetAfterTheBodySoFar();
    void refusedHasNoResponse();
    void abortInResponseStartedDuringReadyRead();
    void abortInBodyDataDuringFinish();
    void abortIsSynchronousAndClosesReplyOnce();
    void releaseRunsExactlyOnce();
};

void TestQtUpstreamCall::bodyBeforeMetadataStillStartsFirst() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    reply->headers(200, {{"content-type", "text/event-stream"}}, false);
    reply->data("data: x\n\n");
    reply->finish();
    QCOMPARE(log.order, (QList<QByteArray>{"started", "data", "finished"}));
    QCOMPARE(log.body, QByteArray("data: x\n\n"));
    QCOMPARE(log.results.front().error, TransportError::None);
}

void TestQtUpstreamCall::bodyLeftUnreadAtFinishIsDelivered() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    reply->headers(200, {});
    reply->data("tail", false);
    reply->finish();
    QCOMPARE(log.order, (QList<QByteArray>{"started", "data", "finished"}));
    QCOMPARE(log.body, QByteArray("tail"));
}

void TestQtUpstreamCall::errorStatusIsNotATransportError() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    reply->headers(503, {{"retry-after", "2"}}, false);
    reply->data("{\"error\":{}}", false);
    reply->finish(QNetworkReply::ServiceUnavailableError);
    QCOMPARE(log.order, (QList<QByteArray>{"started", "data", "finished"}));
    QCOMPARE(log.status, 503);
    QCOMPARE(log.results.front().error, TransportError::None);
}

void TestQtUpstreamCall::cutOffMidBodyIsResetAfterTheBodySoFar() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    reply->headers(200, {});
    reply->data("data: part");
    reply->finish(QNetworkReply::RemoteHostClosedError);
    QCOMPARE(log.order, (QList<QByteArray>{"started", "data", "finished"}));
    QCOMPARE(log.results.front().error, TransportError::Reset);
}

void TestQtUpstreamCall::refusedHasNoResponse() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    reply->finish(QNetworkReply::ConnectionRefusedError);
    QCOMPARE(log.order, (QList<QByteArray>{"finished"}));
    QCOMPARE(log.results.front().error, TransportError::Refused);
}

void TestQtUpstreamCall::abortInResponseStartedDuringReadyRead() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    connect(&call, &UpstreamCall::responseStarted, this, [&call] { call.abort(); });
    reply->headers(500, {}, false);
    reply->data("body"); // responseStarted is emitted from the readyRead handler
    QCOMPARE(log.order, (QList<QByteArray>{"started", "finished"}));
    QCOMPARE(log.results.front().error, TransportError::Aborted);
    QCOMPARE(reply->aborted, 1);
}

void TestQtUpstreamCall::abortInBodyDataDuringFinish() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    connect(&call, &UpstreamCall::bodyData, this, [&call] { call.abort(); });
    reply->headers(200, {});
    reply->data("all of it", false);
    reply->finish(); // bodyData is emitted from the finished handler
    QCOMPARE(log.order, (QList<QByteArray>{"started", "data", "finished"}));
    QCOMPARE(log.results.size(), 1);
    QCOMPARE(log.results.front().error, TransportError::Aborted);
}

void TestQtUpstreamCall::abortIsSynchronousAndClosesReplyOnce() {
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(reply, {}, nullptr, 0);
    Log log;
    log.attach(&call, this);
    reply->headers(200, {});
    call.abort();
    QCOMPARE(log.order, (QList<QByteArray>{"started", "finished"}));
    QCOMPARE(reply->aborted, 1);
    reply->data("late");
    reply->finish();
    call.abort();
    QCOMPARE(log.order.size(), 2);
    QCOMPARE(reply->aborted, 1);
}

void TestQtUpstreamCall::releaseRunsExactlyOnce() {
    int released = 0;
    {
        auto *reply = new ScriptedReply;
        QtUpstreamCall call(
            reply, [&] { ++released; }, nullptr, 0);
        reply->finish();
        QCOMPARE(released, 1);
        call.abort(); // after finish: nothing
    }
    QCOMPARE(released, 1);
    {
        auto *reply = new ScriptedReply;
        QtUpstreamCall call(
            reply, [&] { ++released; }, nullptr, 0);
        call.abort();
        QCOMPARE(released, 2);
    }
    QCOMPARE(released, 2);
    {
        auto *reply = new ScriptedReply;
        QtUpstreamCall call(
            reply, [&] { ++released; }, nullptr, 0);
    } // destroyed while running
    QCOMPARE(released, 3);
}

void TestQtUpstreamCall::abortAfterTheHeadLetsAnEndingBodyEnd() {
    // A caller that stops at its last event: the reply runs on unheard, and when it
    // ends by itself it is not aborted (QNAM keeps the connection), and the slot is released.
    int released = 0;
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(
        reply, [&] { ++released; }, nullptr, 60000);
    Log log;
    log.attach(&call, this);
    reply->headers(200, {});
    reply->data("data: [DONE]\n\n");
    call.abort();
    QCOMPARE(log.order, (QList<QByteArray>{"started", "data", "finished"})); // still synchronous
    QCOMPARE(log.results.front().error, TransportError::Aborted);
    QCOMPARE(released, 0); // the connection is still in use
    reply->data("tail");
    reply->finish();
    QCOMPARE(reply->aborted, 0);
    QCOMPARE(released, 1);
    QCOMPARE(log.order.size(), 3); // nothing more reached the caller
}

void TestQtUpstreamCall::abortAfterTheHeadClosesABodyThatGoesOn() {
    int released = 0;
    auto *reply = new ScriptedReply;
    QtUpstreamCall call(
        reply, [&] { ++released; }, nullptr, 60000);
    Log log;
    log.attach(&call, this);
    reply->headers(200, {});
    call.abort();
    const QByteArray piece(16 * 1024, 'x');
    for (int i = 0; i < 4; ++i)
        reply->data(piece);
    QCOMPARE(reply->aborted, 0); // within the bound
    reply->data(piece);          // past QtUpstreamCall::kLingerBytes
    QCOMPARE(reply->aborted, 1);
    QCOMPARE(released, 1);
    QCOMPARE(log.order, (QList<QByteArray>{"started", "finished"}));
}

QTEST_GUILESS_MAIN(TestQtUpstreamCall)
#include "test_qt_upstream_call.moc"
