// The headless log's sink: a reader that stops reading never holds up the thread that logs, what
// waits for it is bounded, and what was dropped is said once the reader reads again (probe V2 F3:
// 64 KiB of unread log froze every request).

#include "core/telemetry/stderr_sink.h"

#include <QElapsedTimer>
#include <QTest>

#include <csignal>
#include <fcntl.h>
#include <unistd.h>

using namespace sw::telemetry;

namespace {

// Everything the pipe holds now, without waiting for more.
QByteArray drain(int fd) {
    QByteArray all;
    char buffer[65536];
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0)
            break;
        all.append(buffer, qsizetype(n));
    }
    ::fcntl(fd, F_SETFL, flags);
    return all;
}

} // namespace

class TestStderrSink : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aReaderThatStopsReadingHoldsUpNoWriter() {
        int fds[2];
        QCOMPARE(::pipe(fds), 0);
        {
            StderrSink sink(fds[1]);
            const QByteArray line = QByteArray(1000, 'x') + '\n';
            // Far more than the pipe (64 KiB) and the queue (1 MiB) hold, with nobody reading.
            const int lines = 4 * int(StderrSink::kMaxQueuedBytes / line.size());
            for (int i = 0; i < lines; ++i)
                sink.write(line);
            // Each write returned at once, whatever the reader did: what the queue could not hold
            // was dropped and counted, not waited for. (A blocking writer would still be waiting.)
            QVERIFY(sink.dropped() > 0);
            QVERIFY(sink.dropped() < quint64(lines));
            QVERIFY(!sink.flush(50)); // still queued: the reader reads nothing

            // The reader reads again: the queue goes out, and a line says how many were lost.
            QByteArray read;
            QElapsedTimer clock;
            clock.start();
            while (!sink.flush(10) && clock.elapsed() < 20000)
                read += drain(fds[0]);
            QVERIFY(sink.flush(1000));
            sink.write("{\"msg\":\"after\"}\n");
            QVERIFY(sink.flush(1000));
            read += drain(fds[0]);
            QVERIFY2(read.contains("log lines dropped"), read.right(300).constData());
            // Said in one line or in several (drops while a batch was written come in the next one):
            // every dropped line is counted once.
            quint64 said = 0;
            for (qsizetype at = read.indexOf("\"dropped\":"); at >= 0; at = read.indexOf("\"dropped\":", at + 1)) {
                qsizetype end = at + 10;
                while (end < read.size() && read.at(end) >= '0' && read.at(end) <= '9')
                    ++end;
                said += read.mid(at + 10, end - at - 10).toULongLong();
            }
            QCOMPARE(said, sink.dropped());
            QVERIFY(read.endsWith("{\"msg\":\"after\"}\n"));
            // Whole lines only: every line is what was written.
            const QList<QByteArray> got = read.split('\n');
            for (const QByteArray &l : got)
                QVERIFY(l.isEmpty() || l == QByteArray(1000, 'x') || l.startsWith('{'));
        }
        ::close(fds[0]);
        ::close(fds[1]);
    }

    // A reader that is gone costs the lines, not the writer (SIGPIPE is ignored by main; here too).
    void aReaderThatIsGoneCostsTheLinesOnly() {
        std::signal(SIGPIPE, SIG_IGN);
        int fds[2];
        QCOMPARE(::pipe(fds), 0);
        ::close(fds[0]);
        {
            StderrSink sink(fds[1]);
            sink.write("{\"msg\":\"lost\"}\n");
            QVERIFY(sink.flush(1000));
        }
        ::close(fds[1]);
    }
};

QTEST_GUILESS_MAIN(TestStderrSink)
#include "test_stderr_sink.moc"
