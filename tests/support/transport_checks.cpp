#include "transport_checks.h"
#include "core/upstream/transport.h"
#include "hostile_upstream.h"
#include "signal_wait.h"

#include <QObject>
#include <QTcpSocket>
#include <QTest>
#include <algorithm>
#include <memory>
#include <optional>

namespace sw::test {

using sw::upstream::HttpRequest;
using sw::upstream::TransportError;
using sw::upstream::TransportResult;
using sw::upstream::UpstreamCall;

void checkPausedCallHoldsAFloodAndResumesInOrder(sw::upstream::Transport &transport, PauseBound bound,
                                                 const std::function<QString(quint16, QString *trust)> &front) {
    constexpr qint64 kPiece = 64 * 1024;
    constexpr qint64 kPieces = 768;
    auto pattern = [](qint64 offset) { return char((offset * 7 + offset / 251) & 0xff); };
    HostileUpstream up;
    QVERIFY(up.listen());
    up.setScript([&](QTcpSocket *s, const QByteArray &) {
        up.flood(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", [&](qint64 i) -> QByteArray {
            if (i > kPieces)
                return {};
            if (i == kPieces)
                return "0\r\n\r\n";
            QByteArray data(kPiece, Qt::Uninitialized);
            for (qint64 j = 0; j < kPiece; ++j)
                data[j] = pattern(i * kPiece + j);
            return QByteArray::number(kPiece, 16) + "\r\n" + data + "\r\n";
        });
    });
    HttpRequest req;
    req.url = QUrl((front ? front(up.port(), &req.trust) : up.baseUrl()) + QStringLiteral("/v1/chat/completions"));
    req.headers = {{"content-type", "application/json"}};
    req.body = "{}";
    QObject owner;
    UpstreamCall *call = transport.start(req, &owner);
    qint64 received = 0;
    bool inOrder = true;
    int chunksWhilePaused = 0;
    bool paused = false;
    QObject::connect(call, &UpstreamCall::responseStarted, &owner, [&] {
        call->setReadPaused(true);
        paused = true;
    });
    QObject::connect(call, &UpstreamCall::bodyData, &owner, [&](const QByteArray &chunk) {
        chunksWhilePaused += paused ? 1 : 0;
        for (qsizetype j = 0; j < chunk.size() && inOrder; ++j)
            inOrder = chunk.at(j) == pattern(received + j);
        received += chunk.size();
    });
    std::optional<TransportResult> result; // not a CallRecorder: it would keep a copy of every byte
    QObject::connect(call, &UpstreamCall::finished, &owner, [&](const TransportResult &r) { result = r; });
    QVERIFY(waitUntil([&] { return paused; }));
    const qint64 rssBefore = residentBytes();
    qint64 rssPeak = rssBefore;
    // Wait until the flood stops moving: the kernel's buffers are full and the upstream is held.
    qint64 last = -1;
    QVERIFY(waitUntil(
        [&] {
            QTest::qWait(100);
            rssPeak = std::max(rssPeak, residentBytes());
            const bool still = up.floodedBytes() == last;
            last = up.floodedBytes();
            return still;
        },
        10000));
    qInfo("paused: the upstream wrote %lld KiB of %lld, RSS rose by %lld KiB", up.floodedBytes() / 1024,
          kPiece * kPieces / 1024, (rssPeak - rssBefore) / 1024);
    if (bound == PauseBound::Configured) {
        QVERIFY(up.floodRunning());
        QVERIFY2(up.floodedBytes() < 24LL * 1024 * 1024, qPrintable(QString::number(up.floodedBytes())));
#if !defined(__SANITIZE_ADDRESS__) // ASan's shadow memory and quarantine: RSS says nothing there
        QVERIFY2(rssPeak - rssBefore < 8LL * 1024 * 1024,
                 qPrintable(QStringLiteral("RSS grew by %1 KiB while paused").arg((rssPeak - rssBefore) / 1024)));
#endif
    }
    QCOMPARE(chunksWhilePaused, 0);
    QVERIFY(!result);

    paused = false;
    call->setReadPaused(false);
    QVERIFY(waitUntil([&] { return result.has_value(); }, 20000));
    QCOMPARE(result->error, TransportError::None);
    QCOMPARE(received, kPiece * kPieces);
    QVERIFY(inOrder);
}

} // namespace sw::test
