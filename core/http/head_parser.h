#pragma once
// The head of one HTTP/1 message (request or response): its start line and
// header fields, up to the empty line that ends it. Lines end in CRLF, but
// peers that end them in a bare LF exist (RFC 9112 2.2 lets a recipient accept
// that), so both count, mixed too.
//
// The head is bounded: once the bytes seen hold no complete head within
// `maxHeadBytes` (the empty line included), the parse ends as TooLarge instead
// of buffering more. The caller keeps the bytes; the parser only reads them,
// remembering how far it has searched so a head arriving a byte at a time is
// not searched again from its start. A complete head's start line and field
// lines are copied once, so what the parser gives stays valid when the caller's
// buffer moves on.

#include "core/http/headers.h"

#include <QByteArray>
#include <QString>

namespace sw::http {

class HeadParser {
public:
    enum class Status { Incomplete, Complete, TooLarge, Malformed };
    // A header line that is not `token ":" value`: skipped (a client reading a
    // server's answer, as browsers do; an obs-fold continuation is joined to the
    // field before it with a space), or refused (a listener, since whatever
    // reads the request after it may take the line another way: a line without a
    // colon, a space before the colon, an obs-fold continuation).
    // With Skip, a bare CR anywhere in the head is Malformed.
    enum class FieldLines { Skip, Refuse };

    HeadParser(qsizetype maxHeadBytes, FieldLines fieldLines);

    // `message` holds the message from its first byte, growing between calls;
    // call again with more bytes while the result is Incomplete. Once Complete,
    // the results below hold until reset().
    Status parse(QByteArrayView message);
    void reset();

    Status status() const { return m_status; }
    qsizetype headBytes() const { return m_headBytes; }         // the head's length, its empty line included
    const QByteArray &startLine() const { return m_startLine; } // without its line end
    // The fields, in order, names and values trimmed of whitespace. Made on the first call:
    // a caller that only reads them walks them with nextField() instead.
    const HeaderList &headers() const;
    // The field after `pos` (0 for the first), as views into the parser's own copy of the
    // head (valid until reset()); advances `pos`. False once there is none. Allocates nothing.
    bool nextField(qsizetype &pos, QByteArrayView &name, QByteArrayView &value) const;
    QString errorString() const { return m_error; }
    qsizetype maxHeadBytes() const { return m_maxHeadBytes; }

private:
    Status fail(Status status, const QString &why);
    // The line of m_fields from `pos` (its CR dropped); advances `pos`. False past the last.
    bool nextLine(qsizetype &pos, QByteArrayView &line) const;
    static bool hasFoldedLine(QByteArrayView fields);
    void unfold(); // m_fields with each obs-fold replaced by a space

    qsizetype m_maxHeadBytes;
    FieldLines m_fieldLines;
    Status m_status = Status::Incomplete;
    qsizetype m_scanned = 0; // bytes already searched for the empty line
    qsizetype m_headBytes = 0;
    QByteArray m_startLine;
    // The field lines as sent, copied once: a request's head is read field by field on the
    // way in, so the fields are not split into byte arrays of their own unless asked.
    QByteArray m_fields;
    bool m_hasFields = false;     // the head has a line after its start line
    mutable HeaderList m_headers; // headers(), once made
    mutable bool m_headersMade = false;
    QString m_error;
};

} // namespace sw::http
