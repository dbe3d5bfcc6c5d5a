#pragma once
// --demo only: a thin banner that says so and holds the outage switches — take
// a simulated provider down (refused, 503, 429 with Retry-After, stall) and
// bring it back, to watch failover, marks and countdowns happen.

#include <QFrame>
#include <QHash>

class QComboBox;
class QLabel;
class QPushButton;

namespace sw::ui {

class EngineCommands;

class DemoBanner final : public QFrame {
    Q_OBJECT
public:
    enum FaultChoice { Refuse, Status503, RateLimited429, Stall };

    DemoBanner(EngineCommands *commands, QWidget *parent = nullptr);
    void setProviders(const QStringList &providers);
    void setBaseUrl(const QString &baseUrl);
    void takeDown(const QString &provider, FaultChoice fault);
    void bringBack(const QString &provider);

private:
    void refreshStatus();

    EngineCommands *m_commands;
    QComboBox *m_provider = nullptr;
    QComboBox *m_fault = nullptr;
    QPushButton *m_down = nullptr;
    QPushButton *m_back = nullptr;
    QLabel *m_status = nullptr;
    QLabel *m_try = nullptr;
    QHash<QString, QString> m_outages; // provider -> fault words
};

} // namespace sw::ui
