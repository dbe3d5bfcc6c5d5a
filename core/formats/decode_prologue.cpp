#include "core/formats/decode_prologue.h"

#include "core/wire/client_body.h"
#include "core/wire/json.h"

#include <QJsonDocument>
#include <QMimeDatabase>

namespace sw::formats {

bool rejectRequest(model::GatewayError *error, const QString &message) {
    if (error)
        *error = model::GatewayError::make(400, model::ErrorCategory::InvalidRequest, message);
    return false;
}

std::optional<QString> toolNameProblem(const QString &name) {
    if (name.isEmpty())
        return QStringLiteral("required string");
    const QByteArray utf8 = name.toUtf8();
    if (const auto problem = identifierProblem(std::string_view(utf8.constData(), size_t(utf8.size()))))
        return *problem + QStringLiteral(": a model's call to the tool could not be relayed back");
    return std::nullopt;
}

std::optional<model::Tool> toolDefinition(const wire::rj::Value *definition, std::string_view schemaKey,
                                          bool withStrict, QString *nameProblem) {
    namespace rj = wire::rj;
    model::Tool tool;
    tool.name = rj::toString(rj::member(definition, "name"));
    if (const auto problem = toolNameProblem(tool.name)) {
        *nameProblem = *problem;
        return std::nullopt;
    }
    tool.description = rj::toString(rj::member(definition, "description"));
    tool.parameters = rj::toQtObject(rj::member(definition, schemaKey));
    if (const rj::Value *strict = rj::member(definition, "strict"); withStrict && strict && strict->IsBool())
        tool.strict = strict->GetBool();
    return tool;
}

model::ContentBlock openAIFileDocument(const wire::rj::Value *file) {
    namespace rj = wire::rj;
    model::ContentBlock doc;
    doc.type = model::BlockType::Document;
    doc.title = rj::toString(rj::member(file, "filename"));
    const QString data = rj::toString(rj::member(file, "file_data"));
    if (!data.isEmpty()) {
        if (!wire::splitDataUri(data, &doc.mimeType, &doc.data)) {
            doc.data = data.toLatin1();
            if (doc.data.startsWith("JVBER")) // "%PDF" in base64
                doc.mimeType = QStringLiteral("application/pdf");
            else if (!doc.title.isEmpty())
                doc.mimeType = QMimeDatabase().mimeTypeForFile(doc.title, QMimeDatabase::MatchExtension).name();
            else
                doc.mimeType = QStringLiteral("application/octet-stream");
        }
        readPlainTextDocument(&doc);
        return doc;
    }
    doc.url = rj::toString(rj::member(file, "file_id"));
    if (doc.url.isEmpty())
        doc.url = rj::toString(rj::member(file, "file_url"));
    return doc;
}

void readPlainTextDocument(model::ContentBlock *document) {
    if (document->data.isEmpty() || !document->mimeType.startsWith(QLatin1String("text/plain"), Qt::CaseInsensitive))
        return;
    document->text = QString::fromUtf8(QByteArray::fromBase64(document->data));
    document->data.clear();
    document->mimeType = QStringLiteral("text/plain");
}

bool readStopSequences(const wire::rj::Value *value, const char *field, bool orString, QStringList *stops,
                       model::GatewayError *error) {
    namespace rj = wire::rj;
    const bool one = orString && rj::isString(value);
    const rj::Value *array = rj::asArray(value);
    if (!one && !array)
        return true; // none
    qsizetype count = 1;
    qsizetype bytes = one ? qsizetype(rj::bytes(value).size()) : 0;
    if (array) {
        count = array->Size();
        for (const rj::Value &s : array->GetArray())
            bytes += qsizetype(rj::bytes(&s).size());
    }
    if (count > kStopSequenceLimit.count || bytes > kStopSequenceLimit.bytes)
        return rejectRequest(error, QStringLiteral("%1: %2 stop sequences of %3 bytes; at most %4 of %5 bytes in all "
                                                   "are accepted")
                                        .arg(QLatin1String(field))
                                        .arg(count)
                                        .arg(bytes)
                                        .arg(kStopSequenceLimit.count)
                                        .arg(kStopSequenceLimit.bytes));
    if (one)
        *stops << rj::toString(value);
    else
        for (const rj::Value &s : array->GetArray())
            *stops << rj::toString(&s);
    return true;
}

std::optional<model::ChatRequest> rejected(model::GatewayError *error, const QString &message) {
    rejectRequest(error, message);
    return std::nullopt;
}

QString BodyPath::text() const {
    QString out = m_parent ? m_parent->text() : QString();
    if (m_name) {
        if (m_parent)
            out += QLatin1Char('.');
        out += QLatin1String(m_name);
    } else {
        out += QLatin1Char('[') + QString::number(m_index) + QLatin1Char(']');
    }
    return out;
}

std::optional<QString> identifierProblem(std::string_view utf8) {
    if (utf8.size() > size_t(kMaxIdentifierBytes))
        return QStringLiteral("is longer than %1 bytes").arg(kMaxIdentifierBytes);
    // The one rule for what a client names and what an upstream names (wire::isEchoableIdentifier).
    if (!wire::isEchoableIdentifier(utf8))
        return QStringLiteral("contains a control character");
    return std::nullopt;
}

std::optional<model::ChatRequest> beginDecode(wire::Api api, const QByteArray &body, model::GatewayError *error,
                                              bool requireModel) {
    // Parsed once, into RapidJSON's document and never into Qt's tree (a coding agent's body is
    // hundreds of KB): the codec reads it, and the request keeps it for the upstream adapters.
    bool tooManyValues = false;
    std::shared_ptr<const wire::rj::ParsedJson> json = wire::parseClientBody(body, &tooManyValues);
    const wire::rj::Value *o = json ? json->object() : nullptr;
    if (tooManyValues) {
        // Refused before any tree of it is built (Qt's parse, for the message, would build one): a
        // body of tiny values held forty times its size.
        rejectRequest(error, QStringLiteral("Request body holds more than %1 JSON values (keys included) for its %2 "
                                            "bytes; send fewer, larger values")
                                 .arg(wire::rj::ParsedJson::maxValuesFor(size_t(body.size())))
                                 .arg(body.size()));
        return std::nullopt;
    }
    if (!o) {
        // Refused (or not an object): Qt's parser says why, in the words clients have always had.
        QJsonParseError pe;
        QJsonDocument::fromJson(body, &pe);
        if (pe.error != QJsonParseError::NoError)
            rejectRequest(error, QStringLiteral("Request body is not valid JSON: ") + pe.errorString());
        else
            rejectRequest(error, QStringLiteral("Request body must be a JSON object"));
        return std::nullopt;
    }
    model::ChatRequest req;
    req.sourceApi = api;
    req.json = std::move(json);
    req.rawBody = body;
    // Every way a client names the model (pi adds modelId and a Model object) is kept in the
    // attempt history and echoed in headers: checked once here, before anything stores it. pi's
    // two are read on pi's route alone: elsewhere they are a member nothing reads, which refused
    // a good request and named its refusal (probe T3 F3).
    const wire::rj::Value *modelValue = wire::rj::member(o, "model");
    const bool pi = api == wire::Api::Pi;
    const std::pair<QString, const wire::rj::Value *> names[] = {
        {QStringLiteral("model"), modelValue},
        {QStringLiteral("modelId"), pi ? wire::rj::member(o, "modelId") : nullptr},
        {QStringLiteral("model.id"), pi ? wire::rj::member(modelValue, "id") : nullptr},
    };
    for (const auto &[field, value] : names) {
        if (!wire::rj::isString(value))
            continue;
        if (const auto problem = identifierProblem(wire::rj::bytes(value))) {
            rejectRequest(error, field + QLatin1Char(' ') + *problem);
            return std::nullopt;
        }
    }
    // Each message and part becomes a canonical block of a few hundred bytes whatever its size: a
    // body of a million one-character messages (32 MB, inside the byte budget) held 1.2 GB and the
    // engine thread for seconds. The count is bounded before any is built.
    qsizetype parts = 0;
    const wire::rj::Value *lists[] = {wire::rj::member(o, "messages"), wire::rj::member(o, "input"),
                                      wire::rj::member(wire::rj::member(o, "context"), "messages"),
                                      wire::rj::member(o, "tools")};
    for (const wire::rj::Value *list : lists)
        for (const wire::rj::Value &item : wire::rj::elements(list))
            parts += 1 + wire::rj::arraySize(wire::rj::asArray(wire::rj::member(&item, "content")));
    if (parts > kMaxConversationParts) {
        rejectRequest(error, QStringLiteral("the request holds more than %1 messages, content parts and tools; "
                                            "shorten the conversation")
                                 .arg(kMaxConversationParts));
        return std::nullopt;
    }
    if (requireModel) {
        const QString model = wire::rj::toString(modelValue);
        if (!wire::rj::isString(modelValue) || model.isEmpty()) {
            rejectRequest(error, QStringLiteral("model: required string"));
            return std::nullopt;
        }
        req.model = model;
    }
    return req;
}

} // namespace sw::formats
