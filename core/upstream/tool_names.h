#pragma once
// Tool names as each upstream API accepts them (formats/translation_rules.md, "Tool names"). A
// name one API takes can be refused by another with a 400 no failover gets past (`files.read`
// from a pi client, to an OpenAI server): a converted request names such a tool by an alias the
// target takes, and the calls in the answer go back to the client by the name it gave.

#include "core/model/chat_request.h"
#include "core/upstream/upstream_adapter.h"

#include <QHash>
#include <QString>
#include <QStringView>

#include <memory>
#include <optional>

namespace sw::upstream {

// Whether `api` takes `name` as a tool's (function's) name:
//   Messages ^[a-zA-Z0-9_-]{1,128}$ (tool definitions; a tool_use name in the history takes 200),
//   Chat and Responses ^[a-zA-Z0-9_-]{1,64}$,
//   Gemini a letter or "_" first, then letters, digits and "_.:-", 64 at most.
// pi has no upstream and no limit: every name is valid there.
bool isValidToolName(QStringView name, wire::Api api);

// The aliases of one converted request's tool names: for each name the target would refuse (in a
// tool definition, the tool choice, a call or a result of the history), a valid one. An invalid
// character becomes "_" (Gemini: "_" goes first when the name does not start with a letter or
// "_"), a name over the limit keeps its start and ends in "_" and a hash of the whole name, and an
// alias that would be another tool's name (or another alias) ends in a hash too. The aliases
// depend on the request's names alone, so the next turn's request names the same tools alike.
class ToolNameAliases {
public:
    // For `request` going to `target` converted: empty, having allocated nothing, when every name
    // is valid there (the usual case) or when the client spoke `target` (its body goes as sent).
    static ToolNameAliases forRequest(const model::ChatRequest &request, wire::Api target);

    bool isEmpty() const { return m_alias.isEmpty(); }
    // The name the upstream is told: the alias of an aliased name, else the name itself.
    QString alias(const QString &name) const { return m_alias.value(name, name); }
    // The client's name for what the upstream called `name`: the original of an alias, else `name`.
    QString original(const QString &name) const { return m_original.value(name, name); }
    // The upstream's name → the client's, for each alias.
    const QHash<QString, QString> &originals() const { return m_original; }

    // `request` with every aliased name replaced: the tools, the tool choice, the history's calls
    // and results. The caller makes it only when isEmpty() is false.
    model::ChatRequest applied(const model::ChatRequest &request) const;

private:
    QHash<QString, QString> m_alias;    // client's name → the upstream's
    QHash<QString, QString> m_original; // the upstream's → client's
};

// What a converted body is built from: `request` itself when `aliases` is empty (nothing copied),
// else `request` with its names aliased, made in `storage`.
const model::ChatRequest &withToolAliases(const model::ChatRequest &request, const ToolNameAliases &aliases,
                                          std::optional<model::ChatRequest> &storage);

// Wraps an upstream's decoder: a tool call whose name is an alias reaches the client with the
// name it gave (`originals`: the upstream's name → the client's). Everything else passes as it is.
class ToolNameRestoringDecoder final : public WrappingDecoder {
public:
    ToolNameRestoringDecoder(std::unique_ptr<StreamDecoder> inner, QHash<QString, QString> originals);
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

private:
    QList<model::StreamEvent> restored(QList<model::StreamEvent> events) const;

    QHash<QString, QString> m_originals;
};

} // namespace sw::upstream
