#include "core/upstream/tool_names.h"

#include <QCryptographicHash>
#include <QSet>
#include <QStringList>

#include <algorithm>

namespace sw::upstream {

namespace {

constexpr qsizetype kHashChars = 8; // 32 bits of SHA-256: apart for any request's tools

qsizetype maxToolNameLength(wire::Api api) {
    return api == wire::Api::AnthropicMessages ? 128 : 64;
}

bool asciiLetter(QChar c) {
    return (c >= QLatin1Char('a') && c <= QLatin1Char('z')) || (c >= QLatin1Char('A') && c <= QLatin1Char('Z'));
}

bool nameChar(QChar c, wire::Api api) {
    if (asciiLetter(c) || (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('_') ||
        c == QLatin1Char('-'))
        return true;
    return api == wire::Api::Google && (c == QLatin1Char('.') || c == QLatin1Char(':'));
}

bool namedChoice(const QString &choice) {
    return !choice.isEmpty() && choice != QLatin1String("auto") && choice != QLatin1String("none") &&
           choice != QLatin1String("required");
}

// Every tool name `request` carries, in order: the definitions, a named tool choice, then the
// history's calls and results. An empty name names no tool (a result the client left unnamed).
template <typename F> void forEachName(const model::ChatRequest &request, F &&visit) {
    for (const model::Tool &t : request.context.tools)
        visit(t.name);
    if (namedChoice(request.options.toolChoice))
        visit(request.options.toolChoice);
    for (const model::Message &m : request.context.messages) {
        if (m.role == model::Role::ToolResult) {
            if (!m.toolName.isEmpty())
                visit(m.toolName);
            continue;
        }
        for (const model::ContentBlock &b : m.content)
            if (b.type == model::BlockType::ToolCall && !b.toolName.isEmpty())
                visit(b.toolName);
    }
}

// `name` with every character `api` refuses as "_", and for Gemini a "_" first when it starts
// with neither a letter nor "_".
QString sanitized(const QString &name, wire::Api api) {
    QString out;
    out.reserve(name.size() + 1);
    if (api == wire::Api::Google &&
        (name.isEmpty() || !(asciiLetter(name.front()) || name.front() == QLatin1Char('_'))))
        out += QLatin1Char('_');
    for (const QChar c : name)
        out += nameChar(c, api) ? c : QLatin1Char('_');
    return out;
}

// `base` cut to leave room for "_" and a hash of `seed`, within `maxLength`.
QString withHash(const QString &base, const QString &seed, qsizetype maxLength) {
    const QByteArray hash =
        QCryptographicHash::hash(seed.toUtf8(), QCryptographicHash::Sha256).toHex().left(kHashChars);
    return base.left(maxLength - kHashChars - 1) + QLatin1Char('_') + QLatin1String(hash);
}

} // namespace

bool isValidToolName(QStringView name, wire::Api api) {
    if (api == wire::Api::Pi)
        return true;
    if (name.isEmpty() || name.size() > maxToolNameLength(api))
        return false;
    if (api == wire::Api::Google && !(asciiLetter(name.front()) || name.front() == QLatin1Char('_')))
        return false;
    return std::all_of(name.begin(), name.end(), [api](QChar c) { return nameChar(c, api); });
}

ToolNameAliases ToolNameAliases::forRequest(const model::ChatRequest &request, wire::Api target) {
    ToolNameAliases out;
    if (request.sourceApi == target || target == wire::Api::Pi)
        return out; // the client's own body goes as it sent it
    // The usual request: every name valid, checked in place.
    bool valid = true;
    forEachName(request, [&](const QString &name) { valid = valid && isValidToolName(name, target); });
    if (valid)
        return out;
    // The names that stay as they are, which no alias may take, and the ones to alias, in a fixed
    // order (not the request's: the same names get the same aliases however they are listed).
    QSet<QString> taken;
    QSet<QString> refusedOnce;
    forEachName(request, [&](const QString &name) {
        if (isValidToolName(name, target))
            taken.insert(name);
        else
            refusedOnce.insert(name);
    });
    QStringList refused = refusedOnce.values();
    std::sort(refused.begin(), refused.end());
    const qsizetype maxLength = maxToolNameLength(target);
    for (const QString &name : std::as_const(refused)) {
        const QString base = sanitized(name, target);
        QString alias =
            base.isEmpty() || base.size() > maxLength || taken.contains(base) ? withHash(base, name, maxLength) : base;
        // Two hashes alike in 32 bits: the next seed.
        for (int n = 1; taken.contains(alias); ++n)
            alias = withHash(base, name + QLatin1Char('\n') + QString::number(n), maxLength);
        taken.insert(alias);
        out.m_alias.insert(name, alias);
        out.m_original.insert(alias, name);
    }
    return out;
}

model::ChatRequest ToolNameAliases::applied(const model::ChatRequest &request) const {
    model::ChatRequest out = request;
    for (model::Tool &t : out.context.tools)
        t.name = alias(t.name);
    if (namedChoice(out.options.toolChoice))
        out.options.toolChoice = alias(out.options.toolChoice);
    for (model::Message &m : out.context.messages) {
        if (m.role == model::Role::ToolResult) {
            if (const auto it = m_alias.constFind(m.toolName); it != m_alias.cend())
                m.toolName = *it;
            continue;
        }
        for (model::ContentBlock &b : m.content)
            if (b.type == model::BlockType::ToolCall)
                if (const auto it = m_alias.constFind(b.toolName); it != m_alias.cend())
                    b.toolName = *it;
    }
    return out;
}

const model::ChatRequest &withToolAliases(const model::ChatRequest &request, const ToolNameAliases &aliases,
                                          std::optional<model::ChatRequest> &storage) {
    if (aliases.isEmpty())
        return request;
    return storage.emplace(aliases.applied(request));
}

ToolNameRestoringDecoder::ToolNameRestoringDecoder(std::unique_ptr<StreamDecoder> inner,
                                                   QHash<QString, QString> originals)
    : WrappingDecoder(std::move(inner)), m_originals(std::move(originals)) {}

QList<model::StreamEvent> ToolNameRestoringDecoder::feed(const SseEvent &event) {
    return restored(m_inner->feed(event));
}

QList<model::StreamEvent> ToolNameRestoringDecoder::finish() {
    return restored(m_inner->finish());
}

QList<model::StreamEvent> ToolNameRestoringDecoder::restored(QList<model::StreamEvent> events) const {
    for (qsizetype i = 0; i < events.size(); ++i) {
        const model::ContentBlock &block = events.at(i).block;
        if (block.type != model::BlockType::ToolCall)
            continue;
        if (const auto it = m_originals.constFind(block.toolName); it != m_originals.cend())
            events[i].block.toolName = *it;
    }
    return events;
}

} // namespace sw::upstream
