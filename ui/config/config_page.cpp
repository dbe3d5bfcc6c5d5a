#include "ui/config/config_page.h"

#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

namespace sw::ui {

ConfigPage::ConfigPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent)
    : QWidget(parent), m_working(working), m_dialogs(dialogs) {}

QFormLayout *topAlignedForm(QWidget *host) {
    auto *outer = new QVBoxLayout(host);
    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    outer->addLayout(form);
    outer->addStretch(1);
    return form;
}

QLabel *hintLabel(const QString &text, QWidget *parent) {
    auto *label = new QLabel(text, parent);
    label->setWordWrap(true);
    // As wide as the fields: a wrapped label left at its preferred width wraps after a few words.
    label->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    label->setForegroundRole(QPalette::PlaceholderText);
    return label;
}

QSpinBox *millisecondsSpin(QWidget *parent, int max) {
    auto *s = new QSpinBox(parent);
    s->setRange(0, max);
    s->setSingleStep(1000);
    s->setSuffix(QObject::tr(" ms"));
    s->setAlignment(Qt::AlignRight);
    return s;
}

QStringList splitList(const QString &text) {
    QStringList out;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (!part.trimmed().isEmpty())
            out << part.trimmed();
    return out;
}

QString joinList(const QStringList &list) {
    return list.join(QStringLiteral(", "));
}

} // namespace sw::ui
