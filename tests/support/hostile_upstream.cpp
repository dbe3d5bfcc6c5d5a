#include "hostile_upstream.h"

#include <QFile>
#include <QHostAddress>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>

#include <memory>

namespace sw::test {

HostileUpstream::HostileUpstream(QObject *parent) : QObject(parent), m_server(new QTcpServer(this)) {
    connect(m_server, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket *s = m_server->nextPendingConnection()) {
            ++m_accepted;
            s->setParent(this);
            auto buffer = std::make_shared<QByteArray>();
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            connect(s, &QTcpSocket::readyRead, this, [this, s, buffer] {
                *buffer += s->readAll();
                for (;;) {
                    const qsizetype headEnd = buffer->indexOf("\r\n\r\n");
                    if (headEnd < 0)
                        return;
                    qsizetype length = 0;
                    for (const QByteArray &line : buffer->left(headEnd).split('\n')) {
                        const QByteArray l = line.trimmed().toLower();
                        if (l.startsWith("content-length:"))
                            length = l.mid(15).trimmed().toLongLong();
                    }
                    if (buffer->size() < headEnd + 4 + length)
                        return;
                    const QByteArray request = buffer->left(headEnd + 4 + length);
                    buffer->remove(0, headEnd + 4 + length);
                    if (m_script)
                        m_script(s, request);
                }
            });
        }
    });
}

HostileUpstream::~HostileUpstream() = default;

bool HostileUpstream::listen() {
    return m_server->listen(QHostAddress::LocalHost, 0);
}

quint16 HostileUpstream::port() const {
    return m_server->serverPort();
}

QString HostileUpstream::baseUrl() const {
    return QStringLiteral("http://127.0.0.1:%1").arg(port());
}

void HostileUpstream::flood(QTcpSocket *socket, const QByteArray &head, Pieces pieces, std::function<void()> onEnd) {
    m_flooded = 0;
    m_floodRunning = true;
    struct State {
        Pieces pieces;
        std::function<void()> onEnd;
        qint64 next = 0;
        bool ended = false;
    };
    auto state = std::make_shared<State>(State{std::move(pieces), std::move(onEnd)});
    QPointer<QTcpSocket> s(socket);
    auto topUp = [this, s, state] {
        if (!s || state->ended)
            return;
        while (s->bytesToWrite() < kFloodWindow) {
            const QByteArray piece = state->pieces(state->next++);
            if (piece.isEmpty()) {
                state->ended = true;
                m_floodRunning = false;
                if (state->onEnd)
                    state->onEnd();
                return;
            }
            s->write(piece);
        }
    };
    connect(socket, &QTcpSocket::bytesWritten, this, [this, topUp](qint64 n) {
        m_flooded += n;
        topUp();
    });
    connect(socket, &QTcpSocket::disconnected, this, [this, state] {
        state->ended = true;
        m_floodRunning = false;
    });
    socket->write(head);
    topUp();
}

HostileUpstream::Pieces HostileUpstream::repeat(const QByteArray &piece, qint64 count) {
    return [piece, count](qint64 i) { return i < count ? piece : QByteArray(); };
}

qint64 residentBytes() {
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong() * 1024;
    return -1;
}

} // namespace sw::test
