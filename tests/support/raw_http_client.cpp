#include "raw_http_client.h"

#include "signal_wait.h"

namespace sw::test {

RawHttpClient::RawHttpClient(quint16 port, QObject *parent) : RawHttpClient(port, QHostAddress(), parent) {}

RawHttpClient::RawHttpClient(quint16 port, const QHostAddress &from, QObject *parent) : QObject(parent) {
    connect(&m_socket, &QIODevice::readyRead, this, [this]() { m_received += m_socket.readAll(); });
    connect(&m_socket, &QAbstractSocket::disconnected, this, [this]() { m_closed = true; });
    connect(&m_socket, &QAbstractSocket::errorOccurred, this, [this](QAbstractSocket::SocketError e) {
        if (e == QAbstractSocket::RemoteHostClosedError || e == QAbstractSocket::ConnectionRefusedError)
            m_closed = true;
    });
    if (!from.isNull())
        m_socket.bind(from);
    m_socket.connectToHost(QHostAddress::LocalHost, port);
}

bool RawHttpClient::waitConnected(int timeoutMs) {
    return waitUntil([this]() { return m_socket.state() == QAbstractSocket::ConnectedState; }, timeoutMs);
}

void RawHttpClient::send(const QByteArray &bytes) {
    m_socket.write(bytes);
    m_socket.flush();
}

bool RawHttpClient::waitResponse(int timeoutMs) {
    return waitUntil(
        [this]() {
            if (m_closed)
                return true;
            const qsizetype end = m_received.indexOf("\r\n\r\n");
            if (end < 0)
                return false;
            const QByteArray h = m_received.left(end).toLower();
            const qsizetype cl = h.indexOf("content-length:");
            if (cl < 0)
                return true;
            const qint64 length = h.mid(cl + 15, h.indexOf('\n', cl) - cl - 15).trimmed().toLongLong();
            return m_received.size() >= end + 4 + length;
        },
        timeoutMs);
}

bool RawHttpClient::waitClosed(int timeoutMs) {
    return waitUntil([this]() { return m_closed; }, timeoutMs);
}

int RawHttpClient::status() const {
    if (!m_received.startsWith("HTTP/1."))
        return 0;
    return m_received.mid(9, 3).toInt();
}

QByteArray RawHttpClient::head() const {
    const qsizetype end = m_received.indexOf("\r\n\r\n");
    return end < 0 ? m_received : m_received.left(end);
}

QByteArray RawHttpClient::body() const {
    const qsizetype end = m_received.indexOf("\r\n\r\n");
    return end < 0 ? QByteArray() : m_received.mid(end + 4);
}

} // namespace sw::test
