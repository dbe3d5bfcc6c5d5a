// util::EpollDispatcher, the engine thread's event dispatcher, on a thread of its own: posted events
// from other threads and from its own, timers, socket notifiers (level-triggered, activation order,
// one disabled or deleted mid-turn, a descriptor number reused, a regular file, excluded notifiers),
// interrupting a loop, and a TCP echo over many connections. Each case checks what Qt's own
// dispatcher would do, since the engine's sockets, timers and queued calls rely on it.

#include "core/engine_host.h"
#include "core/util/epoll_dispatcher.h"

#include "signal_wait.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QSocketNotifier>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryFile>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>

using sw::test::waitUntil;
using sw::util::EpollDispatcher;

namespace {

// A thread running an event loop on an EpollDispatcher, and a context object living there.
class Worker {
public:
    Worker() {
        m_dispatcher = new EpollDispatcher;
        m_thread.setEventDispatcher(m_dispatcher);
        m_thread.start();
        m_context = new QObject;
        m_context->moveToThread(&m_thread);
    }
    ~Worker() {
        QMetaObject::invokeMethod(
            m_context, [this] { delete m_context; }, Qt::BlockingQueuedConnection);
        m_thread.quit();
        m_thread.wait();
    }
    // Runs fn on the worker thread and waits for it.
    void run(const std::function<void()> &fn) {
        QMetaObject::invokeMethod(m_context, fn, Qt::BlockingQueuedConnection);
    }
    // Runs fn on the worker thread without waiting.
    void post(std::function<void()> fn) { QMetaObject::invokeMethod(m_context, std::move(fn), Qt::QueuedConnection); }
    QObject *context() const { return m_context; }
    // A notifier on the worker's thread (made inside run()) that calls onActivated each time.
    QSocketNotifier *watch(qintptr fd, QSocketNotifier::Type type, std::function<void()> onActivated) {
        auto *n = new QSocketNotifier(fd, type, m_context);
        QObject::connect(n, &QSocketNotifier::activated, n, std::move(onActivated));
        return n;
    }
    EpollDispatcher *dispatcher() const { return m_dispatcher; }
    QThread &thread() { return m_thread; }

private:
    QThread m_thread;
    EpollDispatcher *m_dispatcher = nullptr;
    QObject *m_context = nullptr;
};

struct SocketPair {
    int fds[2] = {-1, -1};
    SocketPair() { QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0); }
    ~SocketPair() { close(); }
    void close() {
        for (int &fd : fds)
            if (fd >= 0) {
                ::close(fd);
                fd = -1;
            }
    }
    void write(int end, const char *bytes) { QVERIFY(::write(fds[end], bytes, qstrlen(bytes)) > 0); }
    QByteArray drain(int end) {
        QByteArray out;
        char buf[256];
        ssize_t n;
        while ((n = ::read(fds[end], buf, sizeof buf)) > 0)
            out.append(buf, n);
        return out;
    }
};

} // namespace

class TestEpollDispatcher : public QObject {
    Q_OBJECT

private slots:
    // The engine thread, and the main thread of these tests, run this dispatcher unless
    // SWITCHMAN_ENGINE_DISPATCHER names Qt's.
    void itIsTheEnginesDispatcher() {
        const QByteArray saved = qgetenv("SWITCHMAN_ENGINE_DISPATCHER");
        qunsetenv("SWITCHMAN_ENGINE_DISPATCHER");
        std::unique_ptr<QAbstractEventDispatcher> chosen(sw::EngineHost::createEventDispatcher());
        QVERIFY(qobject_cast<EpollDispatcher *>(chosen.get()));
        qputenv("SWITCHMAN_ENGINE_DISPATCHER", "unix");
        chosen.reset(sw::EngineHost::createEventDispatcher());
        QVERIFY(chosen && !qobject_cast<EpollDispatcher *>(chosen.get()));
        qputenv("SWITCHMAN_ENGINE_DISPATCHER", "glib");
        QVERIFY(!sw::EngineHost::createEventDispatcher());
        if (saved.isNull())
            qunsetenv("SWITCHMAN_ENGINE_DISPATCHER");
        else
            qputenv("SWITCHMAN_ENGINE_DISPATCHER", saved);
        if (saved.isNull()) // tests/dispatcher installed it before QCoreApplication existed
            QVERIFY(qobject_cast<EpollDispatcher *>(QCoreApplication::eventDispatcher()));
    }

    // A queued call from another thread wakes the waiting thread, every time.
    void postsFromAnotherThreadWakeIt() {
        Worker w;
        std::atomic<int> ran{0};
        for (int i = 0; i < 200; ++i) {
            w.post([&ran] { ++ran; });
            QVERIFY(waitUntil([&] { return ran.load() == i + 1; }, 5000));
        }
        QVERIFY(w.dispatcher()->wakeUpWrites() >= 1);
    }

    // A chain of calls each posted by the previous one on the worker thread runs to its end (the
    // loop never sleeps with a posted event waiting) and writes no wake-up: the thread is awake.
    void postsFromItsOwnThreadNeedNoWakeUp() {
        Worker w;
        std::atomic<int> left{5000};
        std::function<void()> step;
        step = [&] {
            if (--left > 0)
                QMetaObject::invokeMethod(w.context(), step, Qt::QueuedConnection);
        };
        w.run([] {}); // the worker is up and has run a turn
        const quint64 before = w.dispatcher()->wakeUpWrites();
        w.post(step); // one wake-up from here
        QVERIFY(waitUntil([&] { return left.load() == 0; }, 10000));
        const quint64 writes = w.dispatcher()->wakeUpWrites() - before;
        QVERIFY2(writes <= 2, qPrintable(QStringLiteral("%1 wake-up writes for a chain of 5000").arg(writes)));
    }

    // A post made by an aboutToBlock handler (the thread is about to wait) still runs at once.
    void aPostJustBeforeTheWaitIsNotLost() {
        Worker w;
        std::atomic<int> ran{0};
        std::atomic<bool> armed{false};
        w.run([&] {
            QObject::connect(w.dispatcher(), &QAbstractEventDispatcher::aboutToBlock, w.context(), [&] {
                if (armed.exchange(false))
                    QMetaObject::invokeMethod(
                        w.context(), [&ran] { ++ran; }, Qt::QueuedConnection);
            });
        });
        for (int i = 0; i < 20; ++i) {
            armed = true;
            w.post([] {}); // wakes the thread; on its way back to sleep the handler posts
            QVERIFY2(waitUntil([&] { return ran.load() == i + 1; }, 3000), "the post made before the wait was lost");
        }
    }

    void timersFireNotEarlyAndCanBeStopped() {
        Worker w;
        qint64 firedAfterMs = -1;
        std::atomic<bool> fired{false};
        QElapsedTimer clock;
        int longTimer = 0;
        w.run([&] {
            clock.start();
            QTimer::singleShot(40, Qt::PreciseTimer, w.context(), [&] {
                firedAfterMs = clock.elapsed();
                fired = true;
            });
            longTimer = w.context()->startTimer(10000);
        });
        QVERIFY(waitUntil([&] { return fired.load(); }, 5000));
        QVERIFY2(firedAfterMs >= 40, qPrintable(QString::number(firedAfterMs)));
        w.run([&] {
            const int remaining = w.dispatcher()->remainingTime(longTimer);
            QVERIFY2(remaining > 9000 && remaining <= 10500, // a coarse timer may move by 5 %
                     qPrintable(QString::number(remaining)));
            const auto timers = w.dispatcher()->registeredTimers(w.context());
            QCOMPARE(timers.size(), 1);
            QCOMPARE(timers.first().interval, 10000);
            w.context()->killTimer(longTimer);
            QVERIFY(w.dispatcher()->registeredTimers(w.context()).isEmpty());
            QCOMPARE(w.dispatcher()->remainingTime(longTimer), -1);
        });
    }

    // A repeating zero timer does not starve sockets, and sockets do not starve it.
    void zeroTimerAndSocketsShareTheLoop() {
        Worker w;
        SocketPair pair;
        std::atomic<int> ticks{0};
        std::atomic<int> reads{0};
        QTimer *timer = nullptr;
        w.run([&] {
            timer = new QTimer(w.context());
            timer->setInterval(0);
            QObject::connect(timer, &QTimer::timeout, timer, [&ticks] { ++ticks; });
            timer->start();
            w.watch(pair.fds[0], QSocketNotifier::Read, [&] {
                pair.drain(0);
                ++reads;
            });
        });
        for (int i = 0; i < 20; ++i) {
            pair.write(1, "x");
            QVERIFY(waitUntil([&] { return reads.load() >= i + 1; }, 3000));
        }
        QVERIFY(ticks.load() > 20);
        w.run([&] { timer->stop(); });
    }

    // Level-triggered, as poll: unread bytes activate the read notifier on every turn until read.
    void readNotifierIsLevelTriggered() {
        Worker w;
        SocketPair pair;
        std::atomic<int> activations{0};
        QSocketNotifier *n = nullptr;
        w.run([&] {
            n = w.watch(pair.fds[0], QSocketNotifier::Read, [&] { ++activations; }); // reads nothing
        });
        pair.write(1, "ping");
        QVERIFY(waitUntil([&] { return activations.load() >= 5; }, 3000));
        w.run([&] {
            QCOMPARE(pair.drain(0), QByteArray("ping"));
            activations = 0;
        });
        w.run([] {});
        w.run([] {});
        QCOMPARE(activations.load(), 0); // read: quiet
        w.run([&] { delete n; });
    }

    // A disabled notifier is not activated; enabled again while bytes wait, it is.
    void disabledNotifierStaysQuietUntilEnabled() {
        Worker w;
        SocketPair pair;
        std::atomic<int> activations{0};
        QSocketNotifier *n = nullptr;
        w.run([&] {
            n = w.watch(pair.fds[0], QSocketNotifier::Read, [&] {
                ++activations;
                pair.drain(0);
            });
            n->setEnabled(false);
        });
        pair.write(1, "a");
        for (int i = 0; i < 5; ++i)
            w.run([] {});
        QCOMPARE(activations.load(), 0);
        w.run([&] { n->setEnabled(true); });
        QVERIFY(waitUntil([&] { return activations.load() == 1; }, 3000));
        w.run([&] { delete n; });
    }

    // Toggling a notifier while events are handled costs no system call until the next wait, and
    // then at most one (Qt's sockets toggle their write notifier as their write buffer fills and
    // empties, while the read notifier stays). The last notifier of a socket leaves the kernel's
    // list at once, before the socket can be closed.
    void togglingWithinATurnIsBatched() {
        Worker w;
        SocketPair pair;
        QSocketNotifier *r = nullptr;
        QSocketNotifier *wr = nullptr;
        w.run([&] {
            r = new QSocketNotifier(pair.fds[0], QSocketNotifier::Read, w.context());
            wr = new QSocketNotifier(pair.fds[0], QSocketNotifier::Write, w.context());
            wr->setEnabled(false);
        });
        w.run([] {}); // registered with the kernel by now
        // The kernel calls the next wait makes after 1000 toggles of the write notifier that end
        // with it enabled or disabled.
        quint64 before = 0;
        const auto changesAfterToggles = [&](bool endEnabled) {
            w.run([&] {
                before = w.dispatcher()->interestChanges();
                for (int i = 0; i < 1000; ++i) {
                    wr->setEnabled(!endEnabled);
                    wr->setEnabled(endEnabled);
                }
            });
            w.run([] {});
            return w.dispatcher()->interestChanges() - before;
        };
        QCOMPARE(changesAfterToggles(false), quint64(0)); // back where it was
        QCOMPARE(changesAfterToggles(true), quint64(1));  // read and write now
        w.run([&] {
            before = w.dispatcher()->interestChanges();
            delete wr;
            delete r;
            QCOMPARE(w.dispatcher()->interestChanges() - before, quint64(1)); // removed at once
        });
    }

    void writeNotifierFiresOnAWritableSocket() {
        Worker w;
        SocketPair pair;
        std::atomic<int> activations{0};
        w.run([&] {
            auto *n = new QSocketNotifier(pair.fds[0], QSocketNotifier::Write, w.context());
            QObject::connect(n, &QSocketNotifier::activated, n, [&activations, n] {
                ++activations;
                n->setEnabled(false);
            });
        });
        QVERIFY(waitUntil([&] { return activations.load() == 1; }, 3000));
    }

    // Read and write notifiers on one descriptor are both activated by their own readiness.
    void readAndWriteNotifiersOnOneSocket() {
        Worker w;
        SocketPair pair;
        std::atomic<int> reads{0};
        std::atomic<int> writes{0};
        QSocketNotifier *r = nullptr;
        QSocketNotifier *wr = nullptr;
        w.run([&] {
            r = w.watch(pair.fds[0], QSocketNotifier::Read, [&] {
                pair.drain(0);
                ++reads;
            });
            wr = w.watch(pair.fds[0], QSocketNotifier::Write, [&] {
                ++writes;
                wr->setEnabled(false);
            });
        });
        QVERIFY(waitUntil([&] { return writes.load() == 1; }, 3000));
        QCOMPARE(reads.load(), 0);
        pair.write(1, "r");
        QVERIFY(waitUntil([&] { return reads.load() == 1; }, 3000));
        w.run([&] {
            wr->setEnabled(true); // the read notifier stays on the same descriptor
        });
        QVERIFY(waitUntil([&] { return writes.load() == 2; }, 3000));
        pair.write(1, "r");
        QVERIFY(waitUntil([&] { return reads.load() == 2; }, 3000));
        w.run([&] {
            delete r;
            delete wr;
        });
    }

    // Two sockets ready in one wait: the first activated deletes the other's notifier, which then
    // is not activated (Qt's dispatcher drops it from its pending list the same way).
    void aNotifierDeletedByAnEarlierOneIsNotActivated() {
        Worker w;
        SocketPair a;
        SocketPair b;
        std::atomic<int> activations{0};
        QSocketNotifier *na = nullptr;
        QSocketNotifier *nb = nullptr;
        w.run([&] {
            na = new QSocketNotifier(a.fds[0], QSocketNotifier::Read);
            nb = new QSocketNotifier(b.fds[0], QSocketNotifier::Read);
            QObject::connect(na, &QSocketNotifier::activated, w.context(), [&] {
                ++activations;
                a.drain(0);
                delete nb;
                nb = nullptr;
            });
            QObject::connect(nb, &QSocketNotifier::activated, w.context(), [&] {
                ++activations;
                b.drain(0);
                delete na;
                na = nullptr;
            });
        });
        // Both become readable while the worker is busy here, so one wait reports both.
        w.run([&] {
            a.write(1, "a");
            b.write(1, "b");
        });
        QVERIFY(waitUntil([&] { return activations.load() >= 1; }, 3000));
        w.run([] {});
        w.run([] {});
        QCOMPARE(activations.load(), 1);
        w.run([&] {
            delete na;
            delete nb;
        });
    }

    // A socket closed after its notifier is gone, and a new one given the same number: the new
    // notifier is watched (the kernel's list never keeps the old registration).
    void aReusedDescriptorNumberIsWatchedAgain() {
        Worker w;
        auto first = std::make_unique<SocketPair>();
        const int number = first->fds[0];
        std::atomic<int> activations{0};
        w.run([&] {
            auto *old = new QSocketNotifier(number, QSocketNotifier::Read);
            delete old; // as Qt's sockets do before they close
            first->close();
        });
        auto second = std::make_unique<SocketPair>();
        if (second->fds[0] != number && second->fds[1] != number)
            QSKIP("the descriptor number was not reused");
        const int end = second->fds[0] == number ? 0 : 1;
        w.run([&] {
            w.watch(number, QSocketNotifier::Read, [&] {
                second->drain(end);
                ++activations;
            });
        });
        second->write(1 - end, "again");
        QVERIFY(waitUntil([&] { return activations.load() == 1; }, 3000));
    }

    // A regular file cannot be watched by epoll; poll calls it readable on every turn, and so does
    // this dispatcher.
    void aRegularFileIsAlwaysReady() {
        Worker w;
        QTemporaryFile file;
        QVERIFY(file.open());
        file.write("data");
        file.flush();
        std::atomic<int> activations{0};
        QSocketNotifier *n = nullptr;
        w.run([&] { n = w.watch(file.handle(), QSocketNotifier::Read, [&] { ++activations; }); });
        QVERIFY(waitUntil([&] { return activations.load() >= 3; }, 3000));
        w.run([&] { delete n; });
        const int after = activations.load();
        w.run([] {});
        w.run([] {});
        QCOMPARE(activations.load(), after);
    }

    // processEvents(ExcludeSocketNotifiers) leaves ready sockets alone; the next turn delivers.
    void excludedNotifiersWait() {
        Worker w;
        SocketPair pair;
        std::atomic<int> activations{0};
        w.run([&] {
            w.watch(pair.fds[0], QSocketNotifier::Read, [&] {
                pair.drain(0);
                ++activations;
            });
        });
        w.run([&] {
            pair.write(1, "x");
            for (int i = 0; i < 5; ++i)
                w.dispatcher()->processEvents(QEventLoop::ExcludeSocketNotifiers);
            QCOMPARE(activations.load(), 0);
        });
        QVERIFY(waitUntil([&] { return activations.load() == 1; }, 3000));
    }

    // QEventLoop::exit() from another thread ends a nested loop that waits for nothing.
    void exitFromAnotherThreadEndsAWait() {
        Worker w;
        QEventLoop *loop = nullptr;
        std::atomic<bool> inLoop{false};
        std::atomic<bool> returned{false};
        w.post([&] {
            QEventLoop nested;
            loop = &nested;
            // Said from inside the running loop: an exit() before exec() starts would be lost
            // (exec() clears the flag), and the wait below would fail on a slow machine.
            QTimer::singleShot(0, &nested, [&] { inLoop = true; });
            nested.exec();
            returned = true;
        });
        QVERIFY(waitUntil([&] { return inLoop.load(); }, 3000));
        QThread::msleep(20); // let it reach its wait
        loop->exit();
        QVERIFY(waitUntil([&] { return returned.load(); }, 3000));
    }

    // Many TCP connections through a server on the dispatcher: every echo comes back.
    void tcpEchoOverManyConnections() {
        Worker w;
        quint16 port = 0;
        w.run([&] {
            auto *server = new QTcpServer(w.context());
            QVERIFY(server->listen(QHostAddress::LocalHost));
            port = server->serverPort();
            QObject::connect(server, &QTcpServer::newConnection, server, [server] {
                while (QTcpSocket *s = server->nextPendingConnection()) {
                    QObject::connect(s, &QTcpSocket::readyRead, s, [s] { s->write(s->readAll()); });
                    QObject::connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
                }
            });
        });
        std::vector<std::unique_ptr<QTcpSocket>> clients;
        for (int i = 0; i < 100; ++i) {
            auto c = std::make_unique<QTcpSocket>();
            c->connectToHost(QHostAddress::LocalHost, port);
            clients.push_back(std::move(c));
        }
        for (int round = 0; round < 3; ++round) {
            for (size_t i = 0; i < clients.size(); ++i)
                clients[i]->write(QByteArray("message ") + QByteArray::number(int(i)) + '\n');
            for (size_t i = 0; i < clients.size(); ++i) {
                const QByteArray expected = QByteArray("message ") + QByteArray::number(int(i)) + '\n';
                QVERIFY(waitUntil([&] { return clients[i]->bytesAvailable() >= expected.size(); }, 5000));
                QCOMPARE(clients[i]->read(expected.size()), expected);
            }
        }
        clients.clear();
    }
};

QTEST_GUILESS_MAIN(TestEpollDispatcher)
#include "test_epoll_dispatcher.moc"
