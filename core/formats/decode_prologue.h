#pragma once
// The start every inbound decode shares, and the identifier rules for what a client names.

#include "core/formats/inbound_codec.h"
#include "core/wire/echoed_identifier.h"
#include "core/wire/rapid_json.h"

#include <QByteArray>
#include <QString>
#include <optional>
#include <string_view>

namespace sw::formats {

// The longest identifier (model name, Idempotency-Key, ...) the gateway accepts from a client.
inline constexpr int kMaxIdentifierBytes = int(wire::kMaxEchoedIdentifierBytes);
// Why `utf8` cannot be an identifier the gateway stores or echoes (over kMaxIdentifierBytes, or
// a control character: wire::isEchoableIdentifier), or nullopt when it can. The reason never
// quotes the value.
std::optional<QString> identifierProblem(std::string_view utf8);

// The most messages, content parts and tools one request may hold (all counted together).
inline constexpr qsizetype kMaxConversationParts = 100000;

// The most stop sequences one request may name, and their total size (UTF-8 bytes). OpenAI takes 4
// and Gemini 5; Anthropic documents no limit, but no real use comes near these. A sequence the
// upstream cannot take the gateway matches in the answer itself (StopSequenceDecoder), and a
// million of them, unbounded, held the engine thread for seconds (probe X2-F2).
struct StopSequenceLimit {
    qsizetype count;
    qsizetype bytes;
};
inline constexpr StopSequenceLimit kStopSequenceLimit{1024, 64 * 1024};

// The client's stop sequences under `field`: `value` is an array of strings (with `orString`, or
// a string alone), appended to *stops. Past kStopSequenceLimit the request is refused: fills
// *error with a 400 naming the limit and returns false.
bool readStopSequences(const wire::rj::Value *value, const char *field, bool orString, QStringList *stops,
                       model::GatewayError *error);

// The body must be a JSON object. On failure fills *error with a 400 naming what is wrong
// and returns nullopt. Model names ("model", pi's "modelId" and "model.id") must pass
// identifierProblem(). With requireModel, "model" must also be a non-empty string (copied
// to .model). The request's sourceApi is `api`.
std::optional<model::ChatRequest> beginDecode(wire::Api api, const QByteArray &body, model::GatewayError *error,
                                              bool requireModel = true);
// Where a value sits in the client's body ("messages[3].content[1]"), for an error message:
// written out only when one is (a decode walks thousands of values and refuses few). A path
// points to its parent, so it lives no longer than the parent it was made from.
class BodyPath {
public:
    explicit BodyPath(const char *name) : m_name(name) {}
    BodyPath(const BodyPath &parent, const char *name) : m_parent(&parent), m_name(name) {}
    BodyPath(const BodyPath &parent, qsizetype index) : m_parent(&parent), m_index(index) {}
    QString text() const;
    // The path followed by the rest of a message: path + ".role: required string".
    QString operator+(QLatin1StringView rest) const { return text() + rest; }

private:
    const BodyPath *m_parent = nullptr;
    const char *m_name = nullptr;
    qsizetype m_index = -1;
};

// A tool as every inbound format writes one: its name (nullopt without one: the caller's 400
// names where it was missing), its description, and the JSON schema under `schemaKey`. With
// `withStrict`, the client's `strict` when it wrote one: an omitted one means each API's own
// default, and another API's strict mode would reject schemas it was never asked to check.
// A name the gateway could not relay back in the model's call to the tool (over 256 bytes, a
// control character) is refused with the request, with `nameProblem` saying why: sent on, the
// model's call to it failed the answer as the upstream's fault, and marked every candidate of the
// chain for the client's own name (probe S2 F5).
std::optional<model::Tool> toolDefinition(const wire::rj::Value *definition, std::string_view schemaKey,
                                          bool withStrict, QString *nameProblem);
// Why a tool named `name` cannot be relayed (see toolDefinition), or nullopt.
std::optional<QString> toolNameProblem(const QString &name);

// A file part of either OpenAI format as a Document block: `file` is the object holding
// file_data, file_id, file_url and filename (Chat's `file` member, the Responses `input_file`
// part itself). file_data is a data: URI, or bare base64 typed by its content or its file name.
// Call it for a part wire::isTranslatableDocument accepts.
model::ContentBlock openAIFileDocument(const wire::rj::Value *file);
// A document whose data is base64 plain text becomes a plain-text document (its text decoded
// from UTF-8), which every API can read as words.
void readPlainTextDocument(model::ContentBlock *document);

// Sets *error to a 400 invalid-request error with `message`; returns false so a
// validating helper can `return rejectRequest(...)`.
bool rejectRequest(model::GatewayError *error, const QString &message);
// The same, for a decode that gives up: returns nullopt.
std::optional<model::ChatRequest> rejected(model::GatewayError *error, const QString &message);

} // namespace sw::formats
