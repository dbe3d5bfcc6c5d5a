#pragma once
// A one-line label for text of any length (a 200-character model id, an upstream's error): it asks the
// layout for little width, shows what fits with an ellipsis (in the middle for ids, whose two ends tell
// them apart) and the whole text in its tooltip when cut. A plain QLabel's text sets its minimum width,
// so one long id pushed the cards' countdowns and clear buttons out of view.

#include <QLabel>

namespace sw::ui {

class ElidedLabel final : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(Qt::TextElideMode mode = Qt::ElideMiddle, QWidget *parent = nullptr);
    void setFullText(const QString &text); // plain text; text() returns it whole
    QString shownText() const;             // as painted at the current width
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    void updateTip();
    int textWidth() const;
    Qt::TextElideMode m_mode;
};

} // namespace sw::ui
