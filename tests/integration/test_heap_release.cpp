// What the gateway keeps of a large request once it is answered. A conversation of many megabytes
// decodes into several times its size in small blocks; freed, they stayed cached in the allocator
// for the rest of the process's life (150 MB resident after one 16 MiB turn, with 31 MB before it).
// Now the engine gives the free memory back a second (on its clock) after the bytes in flight
// empty, when they held a large request or answer. The real engine on loopback, in front of a
// fake Anthropic upstream; resident memory read from /proc, as a user's task manager reads it.
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "hostile_upstream.h"
#include "raw_http_client.h"

#include "core/util/byte_budget.h"

#include <QCoreApplication>
#include <QTest>
#include <QUrl>

using namespace sw;
using namespace sw::test;

namespace {

constexpr qint64 kMiB = 1 << 20;

#ifdef SWITCHMAN_MIMALLOC

// Deletions posted by the request's objects run, and nothing else is left to do.
void settle() {
    for (int i = 0; i < 5; ++i) {
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        QCoreApplication::processEvents();
    }
}

// 90 000 turns of 150 characters: about 16 MB, what a coding agent's context reaches in a long session.
QByteArray longConversation(const QByteArray &model) {
    QByteArray body = "{\"model\":\"" + model + "\",\"max_tokens\":64,\"messages\":[";
    const QByteArray text = QByteArray("word ").repeated(30);
    for (int i = 0; i < 90000; ++i)
        body += QByteArray(i ? "," : "") + "{\"role\":\"" + (i % 2 ? "assistant" : "user") + "\",\"content\":\"" +
                text + "\"}";
    body += ",{\"role\":\"user\",\"content\":\"and now?\"}]}";
    return body;
}
#endif

} // namespace

class TestHeapRelease : public QObject {
    Q_OBJECT

private slots:
    void aLongConversationsMemoryGoesBackASecondAfterItsAnswer() {
#ifndef SWITCHMAN_MIMALLOC
        QSKIP("built without mimalloc: a sanitizer build's allocator keeps what it likes");
#else
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), "hello", false))
                     .status,
                 200);
        const QByteArray body = longConversation("pa/claude-a");
        QVERIFY(body.size() > 15 * kMiB);
        settle();
        const qint64 before = residentBytes();

        {
            // A plain socket on this thread: a QNetworkAccessManager would copy the body on a thread
            // of its own, whose heap the engine's release does not reach.
            RawHttpClient client(quint16(QUrl(gw.baseUrl()).port()));
            QVERIFY(client.waitConnected());
            client.send("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        "Content-Length: " +
                        QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
            QVERIFY(client.waitResponse(30000));
            QCOMPARE(client.status(), 200);
            QVERIFY(client.body().contains("\"content\""));
        }
        QCOMPARE(gw.anthropicA.requests().size(), 2);
        gw.anthropicA.clearRequests(); // the fake's copy of what it was sent is not the gateway's
        settle();
        // Answered: the decode's blocks are free, and still resident. An allocator that gives them back
        // by itself (another mimalloc, MIMALLOC_PURGE_DELAY=0) leaves nothing to measure here.
        const qint64 kept = residentBytes() - before;
        if (kept < 64 * kMiB)
            QSKIP(
                qPrintable(QStringLiteral("the allocator kept only %1 MiB of the decode by itself").arg(kept / kMiB)));

        clock.advance(999);
        settle();
        QVERIFY2(residentBytes() - before > kept / 2, "given back before its second");

        clock.advance(1);
        settle();
        const qint64 left = residentBytes() - before;
        QVERIFY2(left < kept / 2, qPrintable(QStringLiteral("%1 MiB of %2 MiB still resident a second after the answer")
                                                 .arg(left / kMiB)
                                                 .arg(kept / kMiB)));
#endif
    }

    // The budget's side of it: the engine hears when a large hold is over, once, and never for
    // ordinary requests (the release walks the heap: milliseconds, not for every request).
    void theBudgetSaysOnceWhenALargeHoldIsOver() {
        util::ByteBudget budget(128 * kMiB);
        int calls = 0;
        budget.onEmptiedAfterLarge(4 * kMiB, [&]() { ++calls; });

        // Many ordinary requests, overlapping, a few hundred KiB at most at once.
        for (int i = 0; i < 100; ++i) {
            QVERIFY(budget.take(100 * 1024));
            QVERIFY(budget.take(100 * 1024));
            budget.give(100 * 1024);
            budget.give(100 * 1024);
        }
        QCOMPARE(calls, 0);

        // A large body, and an answer held meanwhile: heard when both are given back, not before.
        QVERIFY(budget.take(3 * kMiB));
        budget.hold(2 * kMiB);
        budget.give(3 * kMiB);
        QCOMPARE(calls, 0);
        budget.give(2 * kMiB);
        QCOMPARE(calls, 1);

        // Ordinary requests after it are not heard again; the next large one is.
        QVERIFY(budget.take(1024));
        budget.give(1024);
        QCOMPARE(calls, 1);
        QVERIFY(budget.take(5 * kMiB));
        budget.give(5 * kMiB);
        QCOMPARE(calls, 2);
    }
};

QTEST_GUILESS_MAIN(TestHeapRelease)
#include "test_heap_release.moc"
