#pragma once
// Models: each "provider/id" with its kind, inputs, reasoning, prices (used by
// the Usage view and the routes' cost ceiling) and tier.

#include "ui/config/list_form_page.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;

namespace sw::ui {

class ModelsPage final : public MapPage<config::ModelConfig> {
public:
    ModelsPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent = nullptr);

private:
    config::ModelConfig named(config::ModelConfig item, const QString &name) const override;
    bool acceptsName(const QString &name) const override;
    void loadItem(const config::ModelConfig &m, bool exists) override;

    QComboBox *m_kind = nullptr;
    QCheckBox *m_text = nullptr;
    QCheckBox *m_image = nullptr;
    QCheckBox *m_reasoning = nullptr;
    QDoubleSpinBox *m_costIn = nullptr;
    QDoubleSpinBox *m_costOut = nullptr;
    QLineEdit *m_tier = nullptr;
};

} // namespace sw::ui
