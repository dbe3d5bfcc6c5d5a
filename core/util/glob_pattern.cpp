#include "core/util/glob_pattern.h"

#include <algorithm>

#include <QChar>

namespace sw::util {

namespace {
char32_t fold(char32_t c) {
    return QChar::toCaseFolded(c);
}

QList<char32_t> codePoints(QStringView text) {
    QList<char32_t> out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        char32_t c = text.at(i).unicode();
        if (text.at(i).isHighSurrogate() && i + 1 < text.size() && text.at(i + 1).isLowSurrogate()) {
            c = QChar::surrogateToUcs4(text.at(i), text.at(i + 1));
            ++i;
        }
        out.append(fold(c));
    }
    return out;
}
} // namespace

GlobPattern::GlobPattern(QStringView pattern) {
    if (pattern.trimmed().isEmpty()) {
        m_error = QStringLiteral("an empty pattern matches no model");
        return;
    }
    const QList<char32_t> cps = codePoints(pattern);
    for (qsizetype i = 0; i < cps.size(); ++i) {
        const char32_t c = cps.at(i);
        Token t;
        if (c == U'*') {
            // A run of stars is one star: it keeps the backtracking in matches() linear.
            if (!m_tokens.isEmpty() && m_tokens.last().kind == Token::AnyRun)
                continue;
            t.kind = Token::AnyRun;
        } else if (c == U'?') {
            t.kind = Token::AnyOne;
        } else if (c == U'[') {
            t.kind = Token::Set;
            qsizetype j = i + 1;
            if (j < cps.size() && (cps.at(j) == U'!' || cps.at(j) == U'^')) {
                t.negated = true;
                ++j;
            }
            bool closed = false;
            for (; j < cps.size(); ++j) {
                if (cps.at(j) == U']') {
                    closed = true;
                    break;
                }
                Range r{cps.at(j), cps.at(j)};
                if (j + 2 < cps.size() && cps.at(j + 1) == U'-' && cps.at(j + 2) != U']') {
                    r.high = cps.at(j + 2);
                    j += 2;
                    if (r.high < r.low) {
                        m_error = QStringLiteral("the range in [...] runs backwards");
                        return;
                    }
                }
                t.ranges.append(r);
            }
            if (!closed) {
                m_error = QStringLiteral("'[' has no closing ']'");
                return;
            }
            if (t.ranges.isEmpty()) {
                m_error = QStringLiteral("[] holds no character");
                return;
            }
            i = j;
        } else {
            t.literal = c;
        }
        m_tokens.append(t);
    }
}

bool GlobPattern::matchesOne(const Token &token, char32_t c) const {
    switch (token.kind) {
    case Token::Literal:
        return token.literal == c;
    case Token::AnyOne:
        return true;
    case Token::Set: {
        bool in = false;
        for (const Range &r : token.ranges)
            in = in || (c >= r.low && c <= r.high);
        return in != token.negated;
    }
    case Token::AnyRun:
        break;
    }
    return false;
}

bool GlobPattern::matches(QStringView text) const {
    if (!isValid())
        return false;
    // Every token but '*' takes one character, so one backtrack point (the last
    // star) suffices: no regex is compiled on the request path.
    const QList<char32_t> t = codePoints(text);
    qsizetype p = 0, i = 0, star = -1, mark = 0;
    while (i < t.size()) {
        if (p < m_tokens.size() && m_tokens.at(p).kind != Token::AnyRun && matchesOne(m_tokens.at(p), t.at(i))) {
            ++p;
            ++i;
        } else if (p < m_tokens.size() && m_tokens.at(p).kind == Token::AnyRun) {
            star = p++;
            mark = i;
        } else if (star >= 0) {
            p = star + 1;
            i = ++mark;
        } else {
            return false;
        }
    }
    while (p < m_tokens.size() && m_tokens.at(p).kind == Token::AnyRun)
        ++p;
    return p == m_tokens.size();
}

int GlobPattern::specificity() const {
    if (!isValid())
        return -1;
    int fixed = 0;
    int runs = 0;
    for (const Token &t : m_tokens) {
        fixed += t.kind == Token::Literal || t.kind == Token::Set;
        runs += t.kind == Token::AnyRun;
    }
    // Fixed characters first; among equals, fewer runs (`a*b` over `a**b` cannot differ, but `ab?*`
    // and `ab*` can): 1000 runs is far past any alias.
    return fixed * 1000 - std::min(runs, 999);
}

} // namespace sw::util
