#pragma once
// One client request in canonical form, plus what a same-API upstream needs to forward it
// untranslated: the API the client spoke and the body as it sent it.

#include "core/model/chat.h"
#include "core/wire/api.h"

#include <QByteArray>
#include <QSet>
#include <QStringList>

#include <memory>

namespace sw::wire::rj {
class ParsedJson;
}

namespace sw::model {

struct ChatRequest {
    wire::Api sourceApi = wire::Api::AnthropicMessages; // the API the client spoke
    QString model;                                      // as the client sent it
    bool stream = false;
    bool includeUsage = false; // OpenAI chat stream_options.include_usage
    // The client asked not to be sent the model's reasoning (OpenRouter's reasoning.exclude): the
    // model still thinks as asked, and a converted answer goes to the client without its thinking.
    bool hideReasoning = false;
    Context context;
    Options options;
    // The body as sent, parsed once by the decoder (core/wire/rapid_json.h: the model only
    // carries it, and nothing changes it after decoding). The upstream adapters read the
    // client's own fields there, and write it whole when the bytes cannot be spliced.
    std::shared_ptr<const wire::rj::ParsedJson> json;
    // The bytes `json` was parsed from (shared with the inbound request's buffer, never copied):
    // a same-API upstream gets them with only the members it must set spliced in. Cleared, the
    // adapter writes `json` whole instead.
    QByteArray rawBody;

    // Names of the client's free-form (`custom`) tools: their calls go back to the client
    // as custom calls whatever API answered.
    QStringList customToolNames() const;
    // The ids of the tool calls in the history's assistant turns, as the client wrote them.
    QSet<QString> historyToolIds() const;
};

} // namespace sw::model
