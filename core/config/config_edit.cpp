#include "core/config/config_edit.h"

#include "core/config/config_writer.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <algorithm>
#include <optional>

namespace sw::config {

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Positions in JSON text: where values start and end. Nothing is decoded, so a
// key is found by its exact spelling; the caller checks the outcome by parsing.
class Scanner {
public:
    explicit Scanner(const QByteArray &text) : m_s(text) {}

    qsizetype skipSpace(qsizetype i) const {
        while (i < m_s.size() && isSpace(m_s.at(i)))
            ++i;
        return i;
    }

    // `i` at the first character of a value: the position just after it.
    qsizetype skipValue(qsizetype i) const {
        if (i >= m_s.size())
            return m_s.size();
        const char c = m_s.at(i);
        if (c == '"')
            return skipString(i);
        if (c == '{' || c == '[') {
            int depth = 0;
            while (i < m_s.size()) {
                const char d = m_s.at(i);
                if (d == '"') {
                    i = skipString(i);
                    continue;
                }
                if (d == '{' || d == '[')
                    ++depth;
                else if ((d == '}' || d == ']') && --depth == 0)
                    return i + 1;
                ++i;
            }
            return i;
        }
        while (i < m_s.size() && !isSpace(m_s.at(i)) && m_s.at(i) != ',' && m_s.at(i) != '}' && m_s.at(i) != ']')
            ++i;
        return i;
    }

    // `open` at the '{' of an object: where the value of the member spelt `key` (quotes
    // included) starts, or -1. *close is the position of the object's '}', or -1 when
    // `open` is not an object.
    qsizetype member(qsizetype open, QByteArrayView key, qsizetype *close) const {
        *close = -1;
        if (open < 0 || open >= m_s.size() || m_s.at(open) != '{')
            return -1;
        qsizetype found = -1;
        qsizetype i = skipSpace(open + 1);
        while (i < m_s.size() && m_s.at(i) == '"') {
            const qsizetype keyEnd = skipString(i);
            const qsizetype value = skipSpace(skipSpace(keyEnd) + 1); // past the ':'
            if (QByteArrayView(m_s).sliced(i, keyEnd - i) == key)
                found = value;
            i = skipSpace(skipValue(value));
            if (i < m_s.size() && m_s.at(i) == ',')
                i = skipSpace(i + 1);
        }
        if (i >= m_s.size() || m_s.at(i) != '}')
            return -1;
        *close = i;
        return found;
    }

private:
    qsizetype skipString(qsizetype i) const {
        for (++i; i < m_s.size(); ++i) {
            if (m_s.at(i) == '\\')
                ++i;
            else if (m_s.at(i) == '"')
                return i + 1;
        }
        return m_s.size();
    }

    const QByteArray &m_s;
};

// `text` with `item` as the last entry of the object or array that opens at `open`
// and closes at `close`: after a comma and a space, or, when the entries are one a
// line, on a line of its own indented as the last one.
QByteArray appended(QByteArray text, qsizetype open, qsizetype close, const QByteArray &item) {
    qsizetype end = close; // just after the last entry
    while (end > open + 1 && isSpace(text.at(end - 1)))
        --end;
    if (end == open + 1)
        return text.insert(open + 1, item);
    const qsizetype newline = text.indexOf('\n', open);
    if (newline < 0 || newline > close)
        return text.insert(end, ", " + item);
    const qsizetype lineStart = text.lastIndexOf('\n', end - 1) + 1;
    qsizetype indentEnd = lineStart;
    while (text.at(indentEnd) == ' ' || text.at(indentEnd) == '\t')
        ++indentEnd;
    return text.insert(end, ",\n" + text.mid(lineStart, indentEnd - lineStart) + item);
}

QByteArray jsonString(const QString &text) {
    return QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact).chopped(1).sliced(1);
}

// The change made in the text; empty when the text is not laid out as expected.
QByteArray splice(const QByteArray &text, const QString &tenant, const QString &keyHash, bool admin) {
    const Scanner scan(text);
    const QByteArray hash = jsonString(keyHash);
    const QByteArray name = jsonString(tenant);
    const QByteArray entry = "{\"keys\": [" + hash + "]" + (admin ? ", \"admin\": true}" : "}");
    qsizetype rootClose = -1;
    const qsizetype root = scan.skipSpace(0);
    const qsizetype tenants = scan.member(root, "\"tenants\"", &rootClose);
    if (rootClose < 0)
        return {};
    if (tenants < 0)
        return appended(text, root, rootClose, "\"tenants\": {" + name + ": " + entry + "}");
    qsizetype tenantsClose = -1;
    const qsizetype found = scan.member(tenants, name, &tenantsClose);
    if (tenantsClose < 0)
        return {};
    if (found < 0)
        return appended(text, tenants, tenantsClose, name + ": " + entry);
    qsizetype foundClose = -1;
    const qsizetype keys = scan.member(found, "\"keys\"", &foundClose);
    if (foundClose < 0)
        return {};
    if (keys < 0)
        return appended(text, found, foundClose, "\"keys\": [" + hash + "]");
    if (text.at(keys) != '[')
        return {};
    return appended(text, keys, scan.skipValue(keys) - 1, hash);
}

// One member of an object in the text: the key as spelt (quotes included) and its value.
struct Member {
    qsizetype keyStart = 0;
    qsizetype keyEnd = 0;
    qsizetype valueStart = 0;
    qsizetype valueEnd = 0;
};

// An object in the text: where it opens and closes, and its members in order.
struct ObjectSpan {
    qsizetype open = 0;
    qsizetype close = 0;
    QList<Member> members;
};

// The object that opens at `open`, or nothing when the text there is not one.
std::optional<ObjectSpan> objectAt(const QByteArray &text, qsizetype open) {
    if (open < 0 || open >= text.size() || text.at(open) != '{')
        return std::nullopt;
    const Scanner scan(text);
    ObjectSpan span;
    span.open = open;
    qsizetype i = scan.skipSpace(open + 1);
    while (i < text.size() && text.at(i) == '"') {
        Member m;
        m.keyStart = i;
        m.keyEnd = scan.skipValue(i);
        const qsizetype colon = scan.skipSpace(m.keyEnd);
        if (colon >= text.size() || text.at(colon) != ':')
            return std::nullopt;
        m.valueStart = scan.skipSpace(colon + 1);
        m.valueEnd = scan.skipValue(m.valueStart);
        if (m.valueEnd <= m.valueStart)
            return std::nullopt;
        span.members.append(m);
        i = scan.skipSpace(m.valueEnd);
        if (i < text.size() && text.at(i) == ',')
            i = scan.skipSpace(i + 1);
    }
    if (i >= text.size() || text.at(i) != '}')
        return std::nullopt;
    span.close = i;
    return span;
}

// The index of the member spelt `key` in `span`; -1 when there is none; -2 when
// the text cannot tell (the key is there twice, or some key of the object is
// spelt with an escape and might be this one).
qsizetype memberIndex(const QByteArray &text, const ObjectSpan &span, const QByteArray &key) {
    qsizetype found = -1;
    for (qsizetype i = 0; i < span.members.size(); ++i) {
        const Member &m = span.members.at(i);
        const QByteArrayView spelt = QByteArrayView(text).sliced(m.keyStart, m.keyEnd - m.keyStart);
        if (spelt.contains('\\'))
            return -2;
        if (spelt == key) {
            if (found >= 0)
                return -2;
            found = i;
        }
    }
    return found;
}

// The object reached from the root through `path`, or nothing when the text
// does not lead there unambiguously.
std::optional<ObjectSpan> objectAtPath(const QByteArray &text, const QStringList &path) {
    std::optional<ObjectSpan> span = objectAt(text, Scanner(text).skipSpace(0));
    for (const QString &key : path) {
        if (!span)
            return std::nullopt;
        const qsizetype i = memberIndex(text, *span, jsonString(key));
        if (i < 0)
            return std::nullopt;
        span = objectAt(text, span->members.at(i).valueStart);
    }
    return span;
}

// The spaces and tabs that start the line holding `at`.
QByteArray lineIndent(const QByteArray &text, qsizetype at) {
    const qsizetype start = text.lastIndexOf('\n', at - 1) + 1;
    qsizetype end = start;
    while (end < text.size() && (text.at(end) == ' ' || text.at(end) == '\t'))
        ++end;
    return text.mid(start, end - start);
}

// How the file is laid out: whether its top-level object has a line per member,
// and how one level of nesting is indented (as the root's first member is; else
// four spaces, what save() writes).
struct FileStyle {
    bool multiLine = false;
    QByteArray unit = QByteArrayLiteral("    ");
};

FileStyle fileStyle(const QByteArray &text) {
    FileStyle style;
    const std::optional<ObjectSpan> root = objectAt(text, Scanner(text).skipSpace(0));
    if (!root)
        return style;
    const qsizetype newline = text.indexOf('\n', root->open);
    style.multiLine = newline >= 0 && newline < root->close;
    if (!root->members.isEmpty() && text.lastIndexOf('\n', root->members.first().keyStart - 1) > root->open) {
        const QByteArray indent = lineIndent(text, root->members.first().keyStart);
        if (!indent.isEmpty())
            style.unit = indent;
    }
    return style;
}

// How a value is written into the text: on one line (with a space inside the
// braces when `padded`, as in `{ "a": 1 }`), or one member a line, `indent`
// being the indentation of the line it starts on. A list of scalars (names,
// `"candidates": ["a", "b"]`) stays on one line unless `namesOneALine`.
struct Layout {
    bool multiLine = false;
    bool padded = false;
    bool namesOneALine = false;
    QByteArray indent;
    QByteArray unit;
};

QByteArray scalarJson(const QJsonValue &value) {
    return QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact).chopped(1).sliced(1);
}

QByteArray render(const QJsonValue &value, const Layout &layout) {
    Layout inner = layout;
    inner.indent += layout.unit;
    inner.namesOneALine = false;
    if (value.isObject()) {
        const QJsonObject o = value.toObject();
        if (o.isEmpty())
            return QByteArrayLiteral("{}");
        QByteArrayList members;
        for (auto it = o.begin(); it != o.end(); ++it)
            members.append(jsonString(it.key()) + ": " + render(it.value(), inner));
        if (layout.multiLine)
            return "{\n" + inner.indent + members.join(",\n" + inner.indent) + "\n" + layout.indent + "}";
        return layout.padded ? "{ " + members.join(", ") + " }" : "{" + members.join(", ") + "}";
    }
    if (value.isArray()) {
        const QJsonArray a = value.toArray();
        if (a.isEmpty())
            return QByteArrayLiteral("[]");
        const bool scalars =
            std::none_of(a.begin(), a.end(), [](const QJsonValue &v) { return v.isObject() || v.isArray(); });
        inner.multiLine = layout.multiLine && (!scalars || layout.namesOneALine);
        QByteArrayList items;
        for (const QJsonValue &v : a)
            items.append(render(v, inner));
        if (inner.multiLine)
            return "[\n" + inner.indent + items.join(",\n" + inner.indent) + "\n" + layout.indent + "]";
        return "[" + items.join(", ") + "]";
    }
    return scalarJson(value);
}

// One change to the file: the member `key` of the object at `path` set to
// `value`, or removed when there is none.
struct Change {
    QStringList path;
    QString key;
    std::optional<QJsonValue> value;
};

// The changes that turn `before` into `after`, as made to `disk` (the same
// object as the file holds it now): an object in both recurses (its member
// missing in `before` counts as empty, so an object the file already has is
// merged into, not replaced); anything else is set whole. A change the file
// already has is left out, and so is a removal of what the file no longer has.
void collectChanges(const QJsonObject &disk, const QJsonObject &before, const QJsonObject &after,
                    const QStringList &path, QList<Change> &out) {
    QStringList keys = before.keys() + after.keys();
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const QString &key : std::as_const(keys)) {
        const QJsonValue now = disk.value(key);
        if (!after.contains(key)) {
            if (disk.contains(key))
                out.append({path, key, std::nullopt});
            continue;
        }
        const QJsonValue wanted = after.value(key);
        if (before.contains(key) && before.value(key) == wanted)
            continue;
        if (wanted.isObject() && now.isObject()) {
            collectChanges(now.toObject(), before.value(key).toObject(), wanted.toObject(), path + QStringList{key},
                           out);
            continue;
        }
        if (!disk.contains(key) || now != wanted)
            out.append({path, key, wanted});
    }
}

// `object` with `change` made to it; the objects on its path exist (collectChanges only descends into them).
QJsonObject applied(QJsonObject object, const Change &change, qsizetype depth = 0) {
    if (depth == change.path.size()) {
        if (change.value)
            object.insert(change.key, *change.value);
        else
            object.remove(change.key);
        return object;
    }
    const QString &step = change.path.at(depth);
    object.insert(step, applied(object.value(step).toObject(), change, depth + 1));
    return object;
}

// `text` with `change` made in place; false when the text is not laid out so that it can be.
bool editText(QByteArray &text, const Change &change, const FileStyle &style) {
    const std::optional<ObjectSpan> span = objectAtPath(text, change.path);
    if (!span)
        return false;
    const QByteArray key = jsonString(change.key);
    const qsizetype index = memberIndex(text, *span, key);
    if (index == -2)
        return false;
    const QList<Member> &members = span->members;
    const qsizetype newline = text.indexOf('\n', span->open);
    const bool linePerMember = newline >= 0 && newline < span->close;
    if (!change.value) {
        if (index < 0)
            return false; // collectChanges saw it in the file
        const Member &m = members.at(index);
        if (members.size() == 1) // the only member: what is left is `{}`
            text.remove(span->open + 1, span->close - span->open - 1);
        else if (index + 1 < members.size()) // with its comma and what follows, up to the next key
            text.remove(m.keyStart, members.at(index + 1).keyStart - m.keyStart);
        else // the last: from the end of the member before it
            text.remove(members.at(index - 1).valueEnd, m.valueEnd - members.at(index - 1).valueEnd);
        return true;
    }
    Layout layout;
    layout.unit = style.unit;
    layout.padded = text.at(span->open + 1) == ' ';
    if (index >= 0) { // the value replaced, laid out as the one that was there
        const Member &m = members.at(index);
        const QByteArray old = text.mid(m.valueStart, m.valueEnd - m.valueStart);
        const bool nested = old.startsWith('{') || old.startsWith('[');
        layout.multiLine = old.contains('\n') || (!nested && linePerMember);
        layout.namesOneALine = old.startsWith('[') && old.contains('\n');
        layout.padded = nested && old.size() > 1 && old.at(1) == ' ';
        layout.indent = lineIndent(text, m.keyStart);
        text.replace(m.valueStart, m.valueEnd - m.valueStart, render(*change.value, layout));
        return true;
    }
    if (members.isEmpty()) { // on a line of its own when the file has them, else inside the braces
        layout.multiLine = style.multiLine;
        const QByteArray outer = lineIndent(text, span->open);
        layout.indent = outer + style.unit;
        const QByteArray member = key + ": " + render(*change.value, layout);
        const QByteArray inside = layout.multiLine ? "\n" + layout.indent + member + "\n" + outer
                                                   : (layout.padded ? " " + member + " " : member);
        text.replace(span->open + 1, span->close - span->open - 1, inside);
        return true;
    }
    // After the last member: on a line of its own indented as that one is, or on the same line.
    const Member &last = members.last();
    layout.multiLine = linePerMember;
    layout.indent = lineIndent(text, last.keyStart);
    const QByteArray member = key + ": " + render(*change.value, layout);
    text.insert(last.valueEnd, layout.multiLine ? ",\n" + layout.indent + member : ", " + member);
    return true;
}

} // namespace

QByteArray withTenantKey(const QByteArray &json, const QString &tenant, const QString &keyHash, bool admin) {
    // What the file must mean afterwards: the document as read, with the one change.
    QJsonObject root = QJsonDocument::fromJson(json).object();
    QJsonObject tenants = root.value(QStringLiteral("tenants")).toObject();
    const bool created = !tenants.contains(tenant);
    QJsonObject entry = tenants.value(tenant).toObject();
    if (admin && created)
        entry.insert(QStringLiteral("admin"), true);
    QJsonArray keys = entry.value(QStringLiteral("keys")).toArray();
    keys.append(keyHash);
    entry.insert(QStringLiteral("keys"), keys);
    tenants.insert(tenant, entry);
    root.insert(QStringLiteral("tenants"), tenants);
    const QJsonDocument expected(root);

    // The same change made in the text, kept only when it means exactly that.
    const QByteArray edited = splice(json, tenant, keyHash, admin && created);
    if (!edited.isEmpty() && QJsonDocument::fromJson(edited) == expected)
        return edited;
    return expected.toJson(QJsonDocument::Indented);
}

QByteArray withChanges(const QByteArray &json, const QJsonObject &before, const QJsonObject &after, QString *error,
                       bool *inPlace) {
    if (inPlace)
        *inPlace = false;
    QJsonParseError parseError;
    const QJsonDocument read = QJsonDocument::fromJson(json, &parseError);
    if (!read.isObject()) {
        if (error)
            *error = parseError.error != QJsonParseError::NoError ? QStringLiteral("not valid JSON (%1 at offset %2)")
                                                                        .arg(parseError.errorString())
                                                                        .arg(parseError.offset)
                                                                  : QStringLiteral("not a JSON object");
        return {};
    }
    QList<Change> changes;
    collectChanges(read.object(), before, after, {}, changes);
    // What the file must mean afterwards: the document as read, with the changes.
    QJsonObject expected = read.object();
    for (const Change &change : std::as_const(changes))
        expected = applied(expected, change);

    // The same changes made in the text, kept only when it means exactly that.
    QByteArray edited = json;
    const FileStyle style = fileStyle(json);
    bool ok = true;
    for (const Change &change : std::as_const(changes))
        ok = ok && editText(edited, change, style);
    if (ok) {
        const QJsonDocument check = QJsonDocument::fromJson(edited, &parseError);
        if (parseError.error == QJsonParseError::NoError && check.isObject() && check.object() == expected) {
            if (inPlace)
                *inPlace = true;
            return edited;
        }
    }
    return QJsonDocument(expected).toJson(QJsonDocument::Indented);
}

std::unique_ptr<QLockFile> lockConfigFile(const QString &path, QString *error) {
    // An edit holds the lock for milliseconds. QLockFile takes over the lock of a process that is gone
    // at once; where its native lock is missing (some network file systems), one older than this.
    constexpr int kStaleLockMs = 10000;
    // Longer than kStaleLockMs, so such a lock is taken over before the wait ends.
    constexpr int kLockWaitMs = 15000;
    // Next to the file written, so every path to one file (a symbolic link, its target) shares one lock.
    const QFileInfo info(path);
    const QString target = info.isSymLink() && !info.canonicalFilePath().isEmpty() ? info.canonicalFilePath() : path;
    QString why;
    if (!makePrivateDirectory(QFileInfo(target).absolutePath(), &why)) {
        if (error)
            *error = why;
        return nullptr;
    }
    auto lock = std::make_unique<QLockFile>(target + QStringLiteral(".lock"));
    lock->setStaleLockTime(kStaleLockMs);
    if (lock->tryLock(kLockWaitMs))
        return lock;
    qint64 pid = 0;
    QString host;
    QString app;
    if (!error)
        return nullptr;
    if (lock->error() == QLockFile::LockFailedError && lock->getLockInfo(&pid, &host, &app))
        *error = QStringLiteral("%1 is locked by process %2 (%3) through %4; try again, or delete that file if no "
                                "such process runs")
                     .arg(path)
                     .arg(pid)
                     .arg(app, lock->fileName());
    else
        *error = QStringLiteral("cannot create the lock file %1").arg(lock->fileName());
    return nullptr;
}

} // namespace sw::config
