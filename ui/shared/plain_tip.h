#pragma once
// Text from a peer (an upstream's error message, a log line's details) as a tooltip. Qt shows a tooltip
// as rich text when it merely looks like HTML (Qt::mightBeRichText): an upstream's "<h1>healthy</h1>" or
// an <img> would be drawn, not shown. Escaped and wrapped, it is shown as the characters it is.

#include <QString>
#include <QTextDocument>

namespace sw::ui {

inline QString plainTip(const QString &text) {
    return text.isEmpty() ? text : Qt::convertFromPlainText(text, Qt::WhiteSpaceNormal);
}

} // namespace sw::ui
