#include "ui/shared/elided_label.h"

#include "ui/shared/plain_tip.h"

#include <QFontMetricsF>
#include <QPainter>

#include <QStyle>
#include <QStyleOption>
#include <cmath>

namespace sw::ui {

namespace {
constexpr int kMinimumChars = 6; // "ab…yz" still tells which one
}

ElidedLabel::ElidedLabel(Qt::TextElideMode mode, QWidget *parent) : QLabel(parent), m_mode(mode) {
    setTextFormat(Qt::PlainText);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void ElidedLabel::setFullText(const QString &text) {
    if (text == this->text())
        return;
    setText(text);
    updateTip();
}

QString ElidedLabel::shownText() const {
    return fontMetrics().elidedText(text(), m_mode, contentsRect().width());
}

int ElidedLabel::textWidth() const {
    // Rounded up: elidedText() measures in fractions, and a short name given its rounded width was cut ("b…").
    return int(std::ceil(QFontMetricsF(font()).horizontalAdvance(text())));
}

QSize ElidedLabel::minimumSizeHint() const {
    const QMargins m = contentsMargins();
    const int width = std::min(fontMetrics().averageCharWidth() * kMinimumChars, textWidth());
    return QSize(width + m.left() + m.right(), QLabel::minimumSizeHint().height());
}

QSize ElidedLabel::sizeHint() const {
    const QMargins m = contentsMargins();
    return QSize(textWidth() + m.left() + m.right(), QLabel::sizeHint().height());
}

void ElidedLabel::paintEvent(QPaintEvent *) {
    QPainter painter(this);
    QStyleOption opt;
    opt.initFrom(this);
    style()->drawItemText(&painter, contentsRect(), int(alignment()) | Qt::TextSingleLine, opt.palette, isEnabled(),
                          shownText(), foregroundRole());
}

void ElidedLabel::resizeEvent(QResizeEvent *event) {
    QLabel::resizeEvent(event);
    updateTip();
}

void ElidedLabel::updateTip() {
    setToolTip(shownText() == text() ? QString() : plainTip(text()));
}

} // namespace sw::ui
