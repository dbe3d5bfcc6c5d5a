#pragma once
// One client request in canonical form, plus what a same-API upstream needs to forward it
// untranslated: the API the client spoke and the body as it sent it.

#include "core/model/chat.h"
#include "core/wire/api.h"

#include <QJsonObject>
#include <QStringList>

namespace sw::model {

struct ChatRequest {
    wire::Api sourceApi = wire::Api::AnthropicMessages; // the API the client spoke
    QString model;                                      // as the client sent it
    bool stream = false;
    bool includeUsage = false; // OpenAI chat stream_options.include_usage
    Context context;
    Options options;
    QJsonObject raw; // the body as sent, for same-API passthrough
    // The bytes `raw` was parsed from (shared with the inbound request's buffer, never copied):
    // a same-API upstream gets them with only the members it must set spliced in. Whoever
    // changes `raw` after decoding clears this, and the adapter then writes `raw` whole.
    QByteArray rawBody;

    // Names of the client's free-form (`custom`) tools: their calls go back to the client
    // as custom calls whatever API answered.
    QStringList customToolNames() const;
};

} // namespace sw::model
