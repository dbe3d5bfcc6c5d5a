#include "core/model/gateway_error.h"

namespace sw::model {

ErrorCategory GatewayError::categoryForStatus(int status) {
    switch (status) {
    case 400:
    case 422:
        return ErrorCategory::InvalidRequest;
    case 401:
        return ErrorCategory::Authentication;
    case 403:
        return ErrorCategory::Permission;
    case 404:
        return ErrorCategory::NotFound;
    case 409:
        return ErrorCategory::Conflict;
    case 413:
        return ErrorCategory::PayloadTooLarge;
    case 415:
        return ErrorCategory::UnsupportedMedia;
    case 429:
        return ErrorCategory::RateLimit;
    case 503:
    case 529:
        return ErrorCategory::Overloaded;
    case 408:
    case 504:
        return ErrorCategory::Timeout;
    default:
        return status >= 400 && status < 500 ? ErrorCategory::InvalidRequest : ErrorCategory::ServerError;
    }
}

GatewayError::Portable GatewayError::portable() const {
    const auto is = [this](std::initializer_list<const char *> codes) {
        for (const char *c : codes)
            if (code == QLatin1String(c))
                return true;
        return false;
    };
    // OpenAI's code for any string over its field's limit: a context overflow only when the field is
    // the conversation's (`messages[3].content`, Responses' `input`). Over a tool's description,
    // a call id or a name, compacting the conversation (what Claude Code does on "prompt is too
    // long") shortens nothing.
    const auto namesConversation = [this] {
        for (const char *field : {"messages", "input", "prompt"}) {
            const QLatin1String f(field);
            if (param == f || ((param.startsWith(f) && param.size() > f.size()) &&
                               (param.at(f.size()) == QLatin1Char('[') || param.at(f.size()) == QLatin1Char('.'))))
                return true;
        }
        return false;
    };
    // Context overflow: OpenAI's code, Anthropic's documented message, Gemini's wording.
    if (is({"context_length_exceeded", "model_context_window_exceeded"}) ||
        (is({"string_above_max_length"}) && namesConversation()) ||
        message.contains(QLatin1String("prompt is too long"), Qt::CaseInsensitive) ||
        message.contains(QLatin1String("exceeds the maximum number of tokens"), Qt::CaseInsensitive) ||
        message.contains(QLatin1String("maximum context length"), Qt::CaseInsensitive))
        return Portable::ContextLength;
    if (is({"rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED"}))
        return Portable::RateLimit;
    if (is({"overloaded_error", "server_is_overloaded", "overloaded", "UNAVAILABLE"}))
        return Portable::Overloaded;
    if (is({"authentication_error", "invalid_api_key", "UNAUTHENTICATED"}))
        return Portable::Authentication;
    return Portable::None;
}

} // namespace sw::model
