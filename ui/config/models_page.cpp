#include "ui/config/models_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

namespace sw::ui {

ModelsPage::ModelsPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent)
    : MapPage(working, dialogs, &config::Config::models,
              {QStringLiteral("model"), tr("Add model"), tr("Model as provider/id:")}, parent) {
    QWidget *host = formHost();
    m_kind = new QComboBox(host);
    m_kind->addItems({QStringLiteral("chat"), QStringLiteral("embedding")});
    auto *inputs = new QHBoxLayout;
    m_text = new QCheckBox(tr("text"), host);
    m_image = new QCheckBox(tr("image"), host);
    inputs->addWidget(m_text);
    inputs->addWidget(m_image);
    inputs->addStretch(1);
    m_reasoning = new QCheckBox(tr("reasoning"), host);
    // Three states: partly checked is unknown, and reasoning settings go as the client asked them.
    m_reasoning->setTristate(true);
    m_reasoning->setToolTip(tr("Checked: the model reasons. Unchecked: it does not, and a request converted from "
                               "another API goes without reasoning settings. Partly checked: unknown."));
    m_costIn = new QDoubleSpinBox(host);
    m_costIn->setObjectName(QStringLiteral("modelCostInput"));
    m_costOut = new QDoubleSpinBox(host);
    m_costOut->setObjectName(QStringLiteral("modelCostOutput"));
    for (auto *s : {m_costIn, m_costOut}) {
        s->setRange(0, 10000);
        s->setDecimals(3);
        s->setPrefix(QStringLiteral("$"));
        s->setSuffix(tr(" / M tokens"));
        s->setAlignment(Qt::AlignRight);
    }
    m_tier = new QLineEdit(host);
    m_tier->setObjectName(QStringLiteral("modelTier"));
    QFormLayout *f = form();
    f->addRow(tr("Kind"), m_kind);
    f->addRow(tr("Input"), inputs);
    f->addRow(QString(), m_reasoning);
    f->addRow(tr("Input price"), m_costIn);
    f->addRow(tr("Output price"), m_costOut);
    f->addRow(tr("Tier"), m_tier);
    f->addRow(
        QString(),
        hintLabel(tr("Prices are per million tokens; the Usage view and the routes' cost ceiling use them."), host));

    connect(m_kind, &QComboBox::currentTextChanged, this,
            [this](const QString &t) { edit([&](auto &m) { m.kind = t; }); });
    auto inputsChanged = [this]() {
        edit([this](auto &m) {
            m.input.clear();
            if (m_text->isChecked())
                m.input << QStringLiteral("text");
            if (m_image->isChecked())
                m.input << QStringLiteral("image");
        });
    };
    connect(m_text, &QCheckBox::toggled, this, inputsChanged);
    connect(m_image, &QCheckBox::toggled, this, inputsChanged);
    connect(m_reasoning, &QCheckBox::stateChanged, this, [this](int state) {
        edit([&](auto &m) {
            m.reasoning = state == Qt::PartiallyChecked ? std::nullopt : std::optional<bool>(state == Qt::Checked);
        });
    });
    connect(m_costIn, &QDoubleSpinBox::valueChanged, this,
            [this](double v) { edit([&](auto &m) { m.costInput = v; }); });
    connect(m_costOut, &QDoubleSpinBox::valueChanged, this,
            [this](double v) { edit([&](auto &m) { m.costOutput = v; }); });
    connect(m_tier, &QLineEdit::textEdited, this,
            [this](const QString &t) { edit([&](auto &m) { m.tier = t.trimmed(); }); });
}

config::ModelConfig ModelsPage::named(config::ModelConfig item, const QString &name) const {
    // The key is what routes refer to; provider and id are its two halves.
    const qsizetype slash = name.indexOf(QLatin1Char('/'));
    item.provider = name.left(slash);
    item.id = name.mid(slash + 1);
    return item;
}

bool ModelsPage::acceptsName(const QString &name) const {
    return name.indexOf(QLatin1Char('/')) > 0;
}

void ModelsPage::loadItem(const config::ModelConfig &m, bool) {
    m_kind->setCurrentText(m.kind);
    m_text->setChecked(m.input.contains(QStringLiteral("text")));
    m_image->setChecked(m.input.contains(QStringLiteral("image")));
    m_reasoning->setCheckState(!m.reasoning ? Qt::PartiallyChecked : *m.reasoning ? Qt::Checked : Qt::Unchecked);
    m_costIn->setValue(m.costInput);
    m_costOut->setValue(m.costOutput);
    m_tier->setText(m.tier);
}

} // namespace sw::ui
