#pragma once
// Text from a peer (an upstream's error message, a client's model id, a log line's details) prepared for the
// window. Every view shows peer text through peerText() (cells, labels) or plainTip() (tooltips):
// - The bidi controls that reorder what follows them (embeddings and overrides U+202A–U+202E, isolates
//   U+2066–U+2069, the marks U+200E/U+200F/U+061C) are shown as visible escapes ("\u202e"), as the command
//   line shows them: an upstream's "\u202egnp.exe" must not read as "exe.png".
// - Qt shows a tooltip as rich text when it merely looks like HTML (Qt::mightBeRichText): an upstream's
//   "<h1>healthy</h1>" or an <img> would be drawn, not shown. Escaped and wrapped, it is shown as the
//   characters it is.

#include <QString>
#include <QTextDocument>

namespace sw::ui {

inline bool isBidiControl(char16_t c) {
    return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x200e || c == 0x200f || c == 0x061c;
}

inline QString peerText(const QString &text) {
    QString out;
    qsizetype copied = 0;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char16_t c = text.at(i).unicode();
        if (!isBidiControl(c))
            continue;
        out += QStringView(text).mid(copied, i - copied);
        out += QStringLiteral("\\u%1").arg(uint(c), 4, 16, QLatin1Char('0'));
        copied = i + 1;
    }
    if (copied == 0)
        return text;
    out += QStringView(text).mid(copied);
    return out;
}

inline QString plainTip(const QString &text) {
    return text.isEmpty() ? text : Qt::convertFromPlainText(peerText(text), Qt::WhiteSpaceNormal);
}

} // namespace sw::ui
