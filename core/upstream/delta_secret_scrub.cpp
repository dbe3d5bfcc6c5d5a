#include "core/upstream/delta_secret_scrub.h"

#include "core/util/redaction.h"
#include "core/wire/json.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>

namespace sw::upstream {

namespace {

bool isDelta(model::EventType type) {
    return type == model::EventType::TextDelta || type == model::EventType::ThinkingDelta ||
           type == model::EventType::ToolCallDelta;
}

bool endsBlock(model::EventType type) {
    return type == model::EventType::TextEnd || type == model::EventType::ThinkingEnd ||
           type == model::EventType::ToolCallEnd;
}

bool sameLetter(QChar a, QChar b) {
    return a == b || a.toCaseFolded() == b.toCaseFolded();
}

using PathStep = std::variant<QString, qsizetype>;

// Where the string `text` first stands in `value`, depth first.
bool findString(const QJsonValue &value, const QString &text, QList<PathStep> &path) {
    if (value.isString())
        return value.toString() == text;
    if (value.isObject()) {
        const QJsonObject o = value.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            path.append(it.key());
            if (findString(it.value(), text, path))
                return true;
            path.removeLast();
        }
    } else if (value.isArray()) {
        const QJsonArray a = value.toArray();
        for (qsizetype i = 0; i < a.size(); ++i) {
            path.append(i);
            if (findString(a.at(i), text, path))
                return true;
            path.removeLast();
        }
    }
    return false;
}

QJsonValue withString(const QJsonValue &value, const QList<PathStep> &path, qsizetype step, const QString &text) {
    if (step == path.size())
        return text;
    if (const auto *key = std::get_if<QString>(&path.at(step))) {
        QJsonObject o = value.toObject();
        o.insert(*key, withString(o.value(*key), path, step + 1, text));
        return o;
    }
    const qsizetype i = std::get<qsizetype>(path.at(step));
    QJsonArray a = value.toArray();
    if (i < a.size())
        a.replace(i, withString(a.at(i), path, step + 1, text));
    return a;
}

SseEvent frameWith(const SseEvent &frame, const QJsonObject &data) {
    return SseEvent{frame.event, wire::compactJson(data)};
}

} // namespace

DeltaSecretScrub::DeltaSecretScrub(QStringList forms) : m_forms(std::move(forms)) {
    for (const QString &form : std::as_const(m_forms))
        m_longest = std::max(m_longest, form.size());
}

qsizetype DeltaSecretScrub::heldTail(const QString &text, qsizetype from) const {
    // Where the longest tail of `text` (starting at `from` or later) of kMinHeldPrefix characters or
    // more begins that is the start of a form, shorter than the form; text.size() when none is.
    const qsizetype size = text.size();
    for (qsizetype p = std::max(from, size - (m_longest - 1)); p <= size - kMinHeldPrefix; ++p) {
        const QStringView tail = QStringView(text).mid(p);
        for (const QString &form : m_forms)
            if (form.size() > tail.size() && sameLetter(tail.front(), form.front()) &&
                tail.compare(QStringView(form).left(tail.size()), Qt::CaseInsensitive) == 0)
                return p;
    }
    return size;
}

QString DeltaSecretScrub::scrubDelta(Block &b, const QString &delta) {
    QString text = b.held + delta;
    b.held.clear();
    // A form that ends in the new text is redacted from where the new text begins, though the
    // client was shown its first characters.
    const QString seen = b.shown + text;
    const qsizetype boundary = b.shown.size();
    QList<std::pair<qsizetype, qsizetype>> cuts; // [from, to) in `text`
    for (const QString &form : std::as_const(m_forms)) {
        qsizetype at = seen.indexOf(form, std::max<qsizetype>(0, boundary - form.size() + 1), Qt::CaseInsensitive);
        while (at >= 0) {
            const qsizetype end = at + form.size();
            if (end > boundary)
                cuts.append({std::max(at, boundary) - boundary, end - boundary});
            at = seen.indexOf(form, end, Qt::CaseInsensitive);
        }
    }
    QString out;
    qsizetype done = 0;
    if (!cuts.isEmpty()) {
        std::sort(cuts.begin(), cuts.end());
        for (const auto &[from, to] : cuts) {
            if (to <= done)
                continue;
            if (from > done)
                out.append(QStringView(text).mid(done, from - done));
            if (from >= done || out.isEmpty() || !out.endsWith(QLatin1String(util::kRedacted)))
                out.append(QLatin1String(util::kRedacted));
            done = to;
        }
    }
    // What may begin a form is held, though it began in what the client was shown.
    // What may begin a form is held, though the form began in what the client was shown (not
    // before a redaction, though: the text up to it is done with).
    const qsizetype start = heldTail(seen, done > 0 ? boundary + done : 0);
    const qsizetype hold = seen.size() - std::max(start, boundary + done);
    out.append(QStringView(text).mid(done, text.size() - done - hold));
    b.held = text.right(hold);
    b.shown = (b.shown + out).right(m_longest - 1);
    return out;
}

void DeltaSecretScrub::release(QList<model::StreamEvent> &events, qsizetype &at, int index, Block &b) {
    if (b.held.isEmpty())
        return;
    model::StreamEvent alone = b.like;
    alone.contentIndex = index;
    // A key cut short at the block's end is still most of a key.
    alone.delta = b.held.size() >= 8 ? QString::fromLatin1(util::kRedacted) : b.held;
    b.shown = (b.shown + alone.delta).right(m_longest - 1);
    b.held.clear();
    events.insert(at, std::move(alone));
    m_edits.append(Edit{at, QString(), true, b.raw});
    ++at;
}

bool DeltaSecretScrub::apply(QList<model::StreamEvent> &events) {
    m_edits.clear();
    if (m_forms.isEmpty())
        return false;
    for (qsizetype i = 0; i < events.size(); ++i) {
        model::StreamEvent &e = events[i];
        if (isDelta(e.type)) {
            if (e.delta.isEmpty() && !m_blocks.count(e.contentIndex))
                continue;
            Block &b = m_blocks[e.contentIndex];
            QString out = scrubDelta(b, e.delta);
            if (!b.held.isEmpty()) {
                b.like = e;
                b.like.delta.clear();
            }
            if (out != e.delta) {
                m_edits.append(Edit{i, e.delta, false, std::nullopt});
                e.delta = std::move(out);
            }
        } else if (endsBlock(e.type)) {
            // release() inserts before the end: `e` is not to be read after it.
            const auto it = m_blocks.find(e.contentIndex);
            if (it != m_blocks.end()) {
                release(events, i, it->first, it->second);
                m_blocks.erase(it);
            }
        } else if (e.type == model::EventType::Done || e.type == model::EventType::Error) {
            for (auto &[index, b] : m_blocks)
                release(events, i, index, b);
            m_blocks.clear();
        }
    }
    return !m_edits.isEmpty();
}

std::optional<QByteArray> DeltaSecretScrub::rewriteFrame(const SseEvent &frame,
                                                         const QList<model::StreamEvent> &events) {
    std::optional<QJsonObject> data;
    QByteArray before; // frames released alone, which go first
    bool matched = true;
    std::map<int, RawTemplate> heldHere; // blocks whose text this frame held back
    for (const Edit &edit : std::as_const(m_edits)) {
        const model::StreamEvent &e = events.at(edit.event);
        if (edit.added) {
            // Released alone: a copy of the delta frame its text was held back from (this one, when
            // the block ends in the same frame).
            const auto here = heldHere.find(e.contentIndex);
            const RawTemplate *like = here != heldHere.end() ? &here->second : edit.like ? &*edit.like : nullptr;
            if (!like) {
                matched = false;
                continue;
            }
            before.append(sseText(frameWith(like->frame, withString(like->data, like->path, 0, e.delta).toObject())));
            continue;
        }
        if (!data) {
            const QJsonDocument doc = QJsonDocument::fromJson(frame.data);
            if (!doc.isObject())
                return std::nullopt;
            data = doc.object();
        }
        QList<PathStep> path;
        if (!findString(*data, edit.upstream, path)) {
            matched = false;
            continue;
        }
        data = withString(*data, path, 0, e.delta).toObject();
        RawTemplate like{frame, *data, path};
        if (const auto it = m_blocks.find(e.contentIndex); it != m_blocks.end() && !it->second.held.isEmpty())
            it->second.raw = like;
        heldHere.insert_or_assign(e.contentIndex, std::move(like));
    }
    if (!matched)
        return std::nullopt;
    return before + sseText(data ? frameWith(frame, *data) : frame);
}

} // namespace sw::upstream
