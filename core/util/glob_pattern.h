#pragma once
// The one glob dialect for model aliases, shared by config validation and the
// resolver, so a pattern that validates is the pattern that matches:
//   *        any run of characters, also none
//   ?        exactly one character
//   [abc]    one character of the set; [a-z] a range; [!abc] or [^abc] one not in it
// Everything else stands for itself, compared case-insensitively (model names
// arrive as "Claude-Opus-4" as often as "claude-opus-4"). There is no escape:
// model names never hold '*', '?' or '['. A '[' without its ']' or an empty set
// is refused, with a reason for the config error.

#include <QList>
#include <QString>
#include <QStringView>

namespace sw::util {

class GlobPattern {
public:
    explicit GlobPattern(QStringView pattern);

    bool isValid() const { return m_error.isEmpty(); }
    // Why the pattern is refused; empty when it is valid.
    QString errorString() const { return m_error; }
    // An invalid pattern matches nothing.
    bool matches(QStringView text) const;
    // How narrowly the pattern picks its models, for choosing among patterns that all match: the
    // characters it fixes (a literal or a set each count one; `?` and `*` none), then fewer `*`.
    // `claude-haiku-*` is more specific than `claude-*`, whichever route comes first.
    int specificity() const;

private:
    struct Range {
        char32_t low;
        char32_t high;
    };
    struct Token {
        enum Kind { Literal, AnyOne, AnyRun, Set } kind = Literal;
        char32_t literal = 0;
        bool negated = false;
        QList<Range> ranges;
    };
    bool matchesOne(const Token &token, char32_t c) const;

    QList<Token> m_tokens;
    QString m_error;
};

} // namespace sw::util
