// The configuration editor: an invalid route is refused with the reason shown
// and nothing written; a valid edit is saved atomically to the file and applied
// to the running engine; keys go to the keychain, tenant keys are shown once.
// Each page edits its part of the file through its widgets; the list-and-form
// editor they share adds, duplicates and removes entries. With
// SWITCHMAN_SCREENSHOT_DIR set, every page is saved as a PNG there.

#include "core/config/config_edit.h"
#include "core/config/config_reader.h"
#include "core/config/config_writer.h"
#include "core/config/demo_config.h"
#include "core/credentials/gateway_key.h"
#include "core/engine_host.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "ui/config/config_editor.h"
#include "ui/shared/engine_commands.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCryptographicHash>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::ui;

namespace {
template <typename T> T *child(QWidget &w, const char *name) {
    auto *c = w.findChild<T *>(QString::fromLatin1(name));
    if (!c)
        qFatal("no child %s", name);
    return c;
}

config::Config startingConfig() {
    config::Config c = config::demoConfig();
    // A file-backed configuration: real-looking providers, not simulated ones.
    for (auto &p : c.providers) {
        p.demo = false;
        p.baseUrl = QStringLiteral("http://127.0.0.1:9");
    }
    return c;
}

// The editor over a file-backed configuration; save() clicks Save and returns what the file then holds.
struct FileEditor {
    QTemporaryDir dir;
    QString path = dir.filePath(QStringLiteral("config.json"));
    ConfigEditor editor{nullptr, nullptr};

    explicit FileEditor(const config::Config &running = startingConfig()) {
        editor.setConfigPath(path);
        editor.setRunningConfig(running, 1);
        editor.resize(1000, 620);
        editor.show();
    }
    config::Config save() {
        if (!editor.problems().isEmpty())
            qWarning("not valid: %s", qPrintable(editor.problems().join(QLatin1Char('\n'))));
        QTest::mouseClick(child<QPushButton>(editor, "saveButton"), Qt::LeftButton);
        const auto loaded = config::load(path);
        if (!loaded.ok()) {
            qWarning("nothing saved that loads: %s", qPrintable(loaded.errors.value(0).toString()));
            return {};
        }
        return *loaded.config;
    }
    void showTab(const QString &title) {
        auto *tabs = editor.findChild<QTabWidget *>();
        for (int i = 0; i < tabs->count(); ++i)
            if (tabs->tabText(i) == title)
                tabs->setCurrentIndex(i);
        QCOMPARE(tabs->tabText(tabs->currentIndex()), title);
    }
    void select(const char *list, const QString &name) {
        auto *l = child<QListWidget>(editor, list);
        const auto found = l->findItems(name, Qt::MatchExactly);
        QVERIFY2(!found.isEmpty(), qPrintable(name));
        l->setCurrentItem(found.first());
    }
};

// A gateway started with `--listen` on an address the network reaches, its file (one admin tenant)
// loopback's, and the window's editor on it, wired as gateway_runner wires them.
struct NetworkListenerEditor {
    QTemporaryDir dir;
    QString path = dir.filePath(QStringLiteral("config.json"));
    QString given = QStringLiteral("0.0.0.0:0");
    config::Config file = startingConfig();
    config::TenantConfig alice;
    EngineHost host;
    test::ScriptedSecretStore engineSecrets;
    EngineCommands commands{&host};
    test::ScriptedSecretStore secrets;
    ConfigEditor editor{&commands, &secrets};
    QString error; // why the gateway did not start

    NetworkListenerEditor() {
        alice.name = QStringLiteral("alice");
        alice.admin = true;
        alice.keyHashes = {credentials::gatewayKeyHash(credentials::newGatewayKey())};
        file.tenants.insert(alice.name, alice);
        if (!config::save(path, file)) {
            error = QStringLiteral("cannot write ") + path;
            return;
        }
        Engine::Options options;
        options.config = file;
        options.config.listen = given;
        options.listenGiven = given;
        options.configPath = path;
        options.secrets = &engineSecrets;
        if (!host.start(std::move(options), QString(), &error))
            return;
        editor.setConfigPath(path);
        editor.setListenGiven(given);
        editor.setListening(host.baseUrl().section(QStringLiteral("://"), 1));
        editor.setRunningConfig(running(), 1);
        editor.resize(1000, 620);
        editor.show();
    }
    config::Config running() {
        config::Config c;
        host.runBlocking([&c](Engine &e) { c = *e.config(); });
        return c;
    }
};

QByteArray readAll(const QString &path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return file.readAll();
}

void writeAll(const QString &path, const QByteArray &bytes) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(bytes) != bytes.size())
        qFatal("cannot write %s", qPrintable(path));
}

// The file as its owner wrote it: a comment, a note in an entry and a default spelt out, none of which
// config::toJson writes. The editor then shows what it holds, as the main window does at start.
QByteArray handWrittenFile(FileEditor &f) {
    QJsonObject root = config::toJson(startingConfig());
    root.insert(QStringLiteral("_comment"), QStringLiteral("kept by Save"));
    QJsonObject providers = root.value(QStringLiteral("providers")).toObject();
    QJsonObject anthropic = providers.value(QStringLiteral("sim-anthropic")).toObject();
    anthropic.insert(QStringLiteral("_note"), QStringLiteral("staging"));
    anthropic.insert(QStringLiteral("maxRetries"), config::ProviderConfig().maxRetries);
    providers.insert(QStringLiteral("sim-anthropic"), anthropic);
    root.insert(QStringLiteral("providers"), providers);
    const QByteArray text = QJsonDocument(root).toJson(QJsonDocument::Indented);
    writeAll(f.path, text);
    const auto loaded = config::load(f.path);
    if (!loaded.ok())
        qFatal("the hand-written file does not load: %s", qPrintable(loaded.errors.value(0).toString()));
    f.editor.setRunningConfig(*loaded.config, 2);
    return text;
}

// `json` with the member at `path` (dotted) set to `value`.
QJsonObject with(QJsonObject json, const QStringList &path, const QJsonValue &value) {
    if (path.size() == 1)
        json.insert(path.first(), value);
    else
        json.insert(path.first(), with(json.value(path.first()).toObject(), path.mid(1), value));
    return json;
}

// Replaces a line edit's text the way a user does: select all, type.
void retype(QLineEdit *edit, const QString &text) {
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, text);
}
} // namespace

class TestConfigEditor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rejectsAnInvalidRouteAndSavesAValidOne() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("sub/config.json"));
        EngineHost host;
        test::ScriptedSecretStore engineSecrets;
        Engine::Options options;
        options.config = startingConfig();
        options.secrets = &engineSecrets;
        QString error;
        QVERIFY2(host.start(std::move(options), QStringLiteral("127.0.0.1:0"), &error), qPrintable(error));

        EngineCommands commands(&host);
        test::ScriptedSecretStore secrets;
        ConfigEditor editor(&commands, &secrets);
        editor.setConfigPath(path);
        editor.setRunningConfig(startingConfig(), 1);
        editor.show();

        auto *routes = child<QListWidget>(editor, "routeList");
        auto *candidates = child<QListWidget>(editor, "routeCandidates");
        auto *remove = child<QPushButton>(editor, "candidateRemove");
        auto *save = child<QPushButton>(editor, "saveButton");
        routes->setCurrentRow(0);
        QCOMPARE(routes->currentItem()->text(), QStringLiteral("demo"));
        QCOMPARE(candidates->count(), 2);

        // Take every candidate out of the route: invalid.
        for (int guard = 0; candidates->count() > 0 && guard < 10; ++guard) {
            candidates->setCurrentRow(0);
            QTest::mouseClick(remove, Qt::LeftButton);
        }
        QVERIFY(editor.isDirty());
        QVERIFY(save->isEnabled());
        const QString problem = QStringLiteral("routes.demo.candidates: must list at least one model");
        QVERIFY2(editor.problems().contains(problem), qPrintable(editor.problems().join(QLatin1Char('\n'))));
        QTest::mouseClick(save, Qt::LeftButton);
        QVERIFY(!QFile::exists(path)); // nothing written
        QVERIFY(child<QLabel>(editor, "configState")->text().startsWith(QStringLiteral("Not saved")));

        // Put the OpenAI candidate back first, then the Anthropic one: a valid, reordered route.
        auto *picker = child<QComboBox>(editor, "candidatePicker");
        auto *add = child<QPushButton>(editor, "candidateAdd");
        picker->setCurrentText(QStringLiteral("sim-openai/gpt-sim"));
        QTest::mouseClick(add, Qt::LeftButton);
        picker->setCurrentText(QStringLiteral("sim-anthropic/claude-sim"));
        QTest::mouseClick(add, Qt::LeftButton);
        child<QDoubleSpinBox>(editor, "routeCeiling")->setValue(4);
        QVERIFY(editor.problems().isEmpty());
        QTest::mouseClick(save, Qt::LeftButton);
        QVERIFY(QFile::exists(path));
        QVERIFY(!editor.isDirty());
        const auto loaded = config::load(path);
        QVERIFY(loaded.ok());
        const auto route = loaded.config->routes.value(QStringLiteral("demo"));
        QCOMPARE(route.candidates,
                 (QStringList{QStringLiteral("sim-openai/gpt-sim"), QStringLiteral("sim-anthropic/claude-sim")}));
        QCOMPARE(route.maxFallbackCostMultiplier.value_or(0), 4.0);
        // No temporary file left next to it (QSaveFile renamed it into place).
        QCOMPARE(QDir(dir.filePath(QStringLiteral("sub"))).entryList(QDir::Files),
                 QStringList{QStringLiteral("config.json")});

        // And the running engine got it.
        QVERIFY(test::waitUntil([&host]() {
            QStringList running;
            host.runBlocking(
                [&running](Engine &e) { running = e.config()->routes.value(QStringLiteral("demo")).candidates; });
            return running.value(0) == QStringLiteral("sim-openai/gpt-sim");
        }));
    }

    // Probe AB4 F1: started with --listen on a network address and a file that says loopback (the
    // starter's default), the first Save handed the window the file's `listen`: "Listen on" read
    // 127.0.0.1:4141, and removing the last tenant then passed the window's check and the engine's
    // apply, and the network listener served callers with no key. The window keeps judging at the
    // listener given at start, and the engine refuses what it would refuse at a reload.
    void aListenerGivenAtStartKeepsTheWindowFromTakingTheKeysOff() {
        NetworkListenerEditor started;
        QVERIFY2(started.error.isEmpty(), qPrintable(started.error));
        const QString &path = started.path;
        const config::Config &file = started.file;
        const config::TenantConfig &alice = started.alice;
        const QString &given = started.given;
        EngineCommands &commands = started.commands;
        ConfigEditor &editor = started.editor;
        const auto running = [&started]() { return started.running(); };
        auto *tabs = editor.findChild<QTabWidget *>();
        auto *listen = child<QLineEdit>(editor, "listen");
        QCOMPARE(listen->text(), given);
        QVERIFY(listen->isReadOnly());
        QVERIFY2(child<QLabel>(editor, "listenHint")->text().contains(QLatin1String("--listen ") + given),
                 qPrintable(child<QLabel>(editor, "listenHint")->text()));

        // A harmless edit, saved: the engine applies it and still says where it listens.
        child<QSpinBox>(editor, "deadline")->setValue(45000);
        QTest::mouseClick(child<QPushButton>(editor, "saveButton"), Qt::LeftButton);
        QVERIFY(!editor.isDirty());
        QVERIFY(test::waitUntil([&running]() { return running().failover.deadlineMs == 45000; }));
        QCOMPARE(running().listen, given);
        QCOMPARE(config::load(path).config->listen, file.listen); // the file keeps its own
        QCOMPARE(editor.workingConfig().listen, given);
        editor.setRunningConfig(running(), 2); // the snapshot after the apply
        for (int i = 0; i < tabs->count(); ++i)
            if (tabs->tabText(i) == QStringLiteral("Listener and failover"))
                tabs->setCurrentIndex(i);
        QCOMPARE(listen->text(), given);
        const QString shots = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
        if (!shots.isEmpty())
            QVERIFY(editor.grab().save(QDir(shots).filePath(QStringLiteral("config-listen-given.png"))));

        // Then the last tenant removed: refused before anything is written.
        for (int i = 0; i < tabs->count(); ++i)
            if (tabs->tabText(i) == QStringLiteral("Tenants"))
                tabs->setCurrentIndex(i);
        child<QListWidget>(editor, "tenantList")->setCurrentRow(0);
        QTest::mouseClick(child<QPushButton>(editor, "tenantRemove"), Qt::LeftButton);
        QVERIFY(editor.workingConfig().tenants.isEmpty());
        QVERIFY2(editor.problems().join(QLatin1Char('\n')).contains(QLatin1String("not a loopback address")),
                 qPrintable(editor.problems().join(QLatin1Char('\n'))));
        QTest::mouseClick(child<QPushButton>(editor, "saveButton"), Qt::LeftButton);
        if (!shots.isEmpty())
            QVERIFY(editor.grab().save(QDir(shots).filePath(QStringLiteral("config-last-tenant-refused.png"))));
        QVERIFY(child<QLabel>(editor, "configState")->text().startsWith(QStringLiteral("Not saved")));
        QVERIFY(config::load(path).config->tenants.contains(alice.name));

        // The engine judges what it is handed the same way, whoever hands it over.
        config::Config keyless = running();
        keyless.listen = file.listen;
        keyless.tenants.clear();
        QString refusal;
        bool answered = false;
        commands.applyConfig(keyless, &editor, [&](const QString &why) {
            refusal = why;
            answered = true;
        });
        QVERIFY(test::waitUntil([&answered]() { return answered; }));
        QVERIFY2(refusal.contains(QLatin1String("network can reach")), qPrintable(refusal));
        QVERIFY(running().tenants.contains(alice.name));
    }

    // Save writes what the file then holds, which may be more than the edits: here the file lost its
    // last tenant meanwhile, and the network listener refuses that. The window then showed the refused
    // configuration as running, clean, and Revert went back to it. Now the one the gateway runs stays
    // the running one, the editor stays dirty and says the file holds the refused changes, and
    // Revert then Save writes the running one back.
    void aConfigurationTheEngineRefusesStaysUnapplied() {
        NetworkListenerEditor started;
        QVERIFY2(started.error.isEmpty(), qPrintable(started.error));
        const QString &path = started.path;
        const config::Config &file = started.file;
        const config::TenantConfig &alice = started.alice;
        ConfigEditor &editor = started.editor;
        const auto running = [&started]() { return started.running(); };
        const int deadline = editor.workingConfig().failover.deadlineMs;

        config::Config keyless = file;
        keyless.tenants.clear();
        QVERIFY(config::save(path, keyless)); // by hand, in another editor
        child<QSpinBox>(editor, "deadline")->setValue(45000);
        QVERIFY(editor.problems().isEmpty()); // the window's copy still has its tenant
        QTest::mouseClick(child<QPushButton>(editor, "saveButton"), Qt::LeftButton);
        auto *state = child<QLabel>(editor, "configState");
        QVERIFY(test::waitUntil([state]() { return state->text().contains(QLatin1String("but not applied")); }));
        QVERIFY2(state->text().contains(QLatin1String("network can reach")), qPrintable(state->text()));
        QVERIFY2(state->text().contains(QLatin1String("The file holds these changes")), qPrintable(state->text()));
        QVERIFY(running().tenants.contains(alice.name));
        QVERIFY(editor.isDirty());
        QVERIFY(child<QPushButton>(editor, "saveButton")->isEnabled());
        QVERIFY(editor.workingConfig().tenants.isEmpty()); // what the file holds, its problem listed
        QVERIFY2(editor.problems().join(QLatin1Char('\n')).contains(QLatin1String("not a loopback address")),
                 qPrintable(editor.problems().join(QLatin1Char('\n'))));
        const QString shots = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
        if (!shots.isEmpty())
            QVERIFY(editor.grab().save(QDir(shots).filePath(QStringLiteral("config-save-refused.png"))));

        // Revert shows what the gateway runs, not what it refused; Save then puts it back in the file.
        QTest::mouseClick(child<QPushButton>(editor, "revertButton"), Qt::LeftButton);
        QVERIFY(editor.workingConfig().tenants.contains(alice.name));
        QCOMPARE(editor.workingConfig().failover.deadlineMs, deadline);
        QVERIFY(editor.isDirty());
        QTest::mouseClick(child<QPushButton>(editor, "saveButton"), Qt::LeftButton);
        QVERIFY(!editor.isDirty());
        QVERIFY(config::load(path).config->tenants.contains(alice.name));
        QCOMPARE(config::load(path).config->failover.deadlineMs, deadline);
        QVERIFY(running().tenants.contains(alice.name));
    }

    // Without --listen, a `listen` edited since the start takes effect at the next one: until then
    // the edits are judged at the listener in effect too.
    void editsAreJudgedAtTheListenerInEffect() {
        config::Config running = startingConfig();
        running.tenants.clear();
        FileEditor f(running);
        QVERIFY(f.editor.problems().isEmpty());
        f.editor.setListening(QStringLiteral("0.0.0.0:4141"));
        QVERIFY2(f.editor.problems()
                     .join(QLatin1Char('\n'))
                     .contains(QLatin1String("until the next start the gateway "
                                             "listens on 0.0.0.0:4141")),
                 qPrintable(f.editor.problems().join(QLatin1Char('\n'))));
        f.editor.setListening(running.listen);
        QVERIFY(f.editor.problems().isEmpty());
    }

    void setKeyStoresTheSecretAndAddsTheReference() {
        test::ScriptedSecretStore secrets;
        ConfigEditor editor(nullptr, &secrets);
        editor.setRunningConfig(startingConfig(), 1);
        editor.askText = [](const QString &, const QString &, const QString &initial) {
            return initial + QStringLiteral("-main");
        };
        editor.askSecret = [](const QString &, const QString &) { return QStringLiteral("sk-secret-123"); };
        auto *providers = child<QListWidget>(editor, "providerList");
        providers->setCurrentRow(0);
        const QString id = providers->currentItem()->text();
        QTest::mouseClick(child<QPushButton>(editor, "setKey"), Qt::LeftButton);
        QVERIFY(test::waitUntil([&]() {
            return editor.workingConfig().providers.value(id).credentials.contains(QStringLiteral("keychain:") + id +
                                                                                   QStringLiteral("-main"));
        }));
        QCOMPARE(secrets.secrets.value(id + QStringLiteral("-main")), QByteArrayLiteral("sk-secret-123"));
        // The secret itself never enters the configuration.
        QVERIFY(!QJsonDocument(config::toJson(editor.workingConfig())).toJson().contains("sk-secret-123"));
    }

    void createdTenantKeyIsShownOnceAndOnlyItsHashKept() {
        ConfigEditor editor(nullptr, nullptr);
        editor.setRunningConfig(startingConfig(), 1);
        QString shownKey;
        int shown = 0;
        editor.askText = [](const QString &, const QString &, const QString &) { return QStringLiteral("alice"); };
        editor.showNewKey = [&](const QString &tenant, const QString &key) {
            QCOMPARE(tenant, QStringLiteral("alice"));
            shownKey = key;
            ++shown;
        };
        auto *tabs = editor.findChild<QTabWidget *>();
        tabs->setCurrentIndex(3);
        QTest::mouseClick(child<QPushButton>(editor, "tenantAdd"), Qt::LeftButton);
        QCOMPARE(shown, 1);
        // The same format `switchman key create` prints.
        QVERIFY(shownKey.startsWith(QStringLiteral("sm-")) && shownKey.size() == 46);
        const auto tenant = editor.workingConfig().tenants.value(QStringLiteral("alice"));
        QCOMPARE(tenant.keyHashes, QStringList{credentials::gatewayKeyHash(shownKey)});
        QVERIFY(!QJsonDocument(config::toJson(editor.workingConfig())).toJson().contains(shownKey.toUtf8()));
        QVERIFY(editor.problems().isEmpty());
    }

    void providersPageEditsTheBaseUrl() {
        FileEditor f;
        f.showTab(QStringLiteral("Providers"));
        f.select("providerList", QStringLiteral("sim-openai"));
        retype(child<QLineEdit>(f.editor, "providerUrl"), QStringLiteral("https://llm.example.test/v1"));
        QVERIFY(f.editor.isDirty());
        const config::Config saved = f.save();
        QCOMPARE(saved.providers.value(QStringLiteral("sim-openai")).baseUrl,
                 QStringLiteral("https://llm.example.test/v1"));
        // Only the selected provider changed.
        QCOMPARE(saved.providers.value(QStringLiteral("sim-anthropic")),
                 startingConfig().providers.value(QStringLiteral("sim-anthropic")));
    }

    void saveKeepsWhatTheFileHasBesideTheEdit() {
        FileEditor f;
        handWrittenFile(f);
        f.showTab(QStringLiteral("Providers"));
        f.select("providerList", QStringLiteral("sim-openai"));
        retype(child<QLineEdit>(f.editor, "providerUrl"), QStringLiteral("https://llm.example.test/v1"));
        QVERIFY(f.editor.isDirty());
        // Meanwhile `switchman key create` adds a tenant to the file.
        const QString hash = credentials::gatewayKeyHash(credentials::newGatewayKey());
        const QByteArray onDisk = config::withTenantKey(readAll(f.path), QStringLiteral("alice"), hash, true);
        writeAll(f.path, onDisk);

        const config::Config saved = f.save();
        QCOMPARE(saved.providers.value(QStringLiteral("sim-openai")).baseUrl,
                 QStringLiteral("https://llm.example.test/v1"));
        QCOMPARE(saved.tenants.value(QStringLiteral("alice")).keyHashes, QStringList{hash});
        // Exactly the one change: the comment, the note and the spelt-out default are still there.
        const QJsonObject expected = with(QJsonDocument::fromJson(onDisk).object(),
                                          QString::fromLatin1("providers.sim-openai.baseUrl").split('.'),
                                          QStringLiteral("https://llm.example.test/v1"));
        QCOMPARE(QJsonDocument::fromJson(readAll(f.path)).object(), expected);
        // And byte for byte: the file as it was but for that one value.
        QByteArray edited = onDisk;
        const qsizetype url = edited.indexOf("http://127.0.0.1:9", edited.indexOf("\"sim-openai\": {"));
        QVERIFY(url > 0);
        QCOMPARE(readAll(f.path), edited.replace(url, 18, "https://llm.example.test/v1"));
        QCOMPARE(expected.value(QStringLiteral("_comment")).toString(), QStringLiteral("kept by Save"));
        QVERIFY(expected.value(QStringLiteral("providers"))
                    .toObject()
                    .value(QStringLiteral("sim-anthropic"))
                    .toObject()
                    .contains(QStringLiteral("_note")));
        // The window now shows, and runs, what the file holds: the tenant too.
        QVERIFY(!f.editor.isDirty());
        QCOMPARE(f.editor.workingConfig(), saved);
    }

    void aReloadWhileEditingIsNotUndoneBySave() {
        // The file gains a tenant and the engine re-reads it (admin/reload) while the window has unsaved edits.
        FileEditor f;
        handWrittenFile(f);
        f.showTab(QStringLiteral("Routes"));
        f.select("routeList", QStringLiteral("demo"));
        retype(child<QLineEdit>(f.editor, "routeAliases"), QStringLiteral("sonnet-latest"));
        const QString hash = credentials::gatewayKeyHash(credentials::newGatewayKey());
        writeAll(f.path, config::withTenantKey(readAll(f.path), QStringLiteral("alice"), hash, true));
        const auto reloaded = config::load(f.path);
        QVERIFY(reloaded.ok());
        f.editor.setRunningConfig(*reloaded.config, 3);
        QVERIFY(f.editor.isDirty());

        const config::Config saved = f.save();
        QCOMPARE(saved.routes.value(QStringLiteral("demo")).aliases, QStringList{QStringLiteral("sonnet-latest")});
        QCOMPARE(saved.tenants.value(QStringLiteral("alice")).keyHashes, QStringList{hash});
    }

    void aFileThatNoLongerValidatesWithTheEditIsLeftAlone() {
        FileEditor f;
        handWrittenFile(f);
        f.showTab(QStringLiteral("Providers"));
        f.select("providerList", QStringLiteral("sim-openai"));
        retype(child<QLineEdit>(f.editor, "providerUrl"), QStringLiteral("https://llm.example.test/v1"));
        // Someone adds a key this version does not know to the file meanwhile.
        QJsonObject edited =
            with(QJsonDocument::fromJson(readAll(f.path)).object(),
                 QString::fromLatin1("providers.sim-anthropic.colour").split('.'), QStringLiteral("blue"));
        const QByteArray onDisk = QJsonDocument(edited).toJson();
        writeAll(f.path, onDisk);

        QTest::mouseClick(child<QPushButton>(f.editor, "saveButton"), Qt::LeftButton);
        QCOMPARE(readAll(f.path), onDisk); // nothing written
        const QString state = child<QLabel>(f.editor, "configState")->text();
        QVERIFY2(state.startsWith(QStringLiteral("Not saved")) &&
                     state.contains(QStringLiteral("providers.sim-anthropic.colour")),
                 qPrintable(state));
        QVERIFY(f.editor.isDirty());
    }

    void modelsPageEditsThePrice() {
        FileEditor f;
        f.showTab(QStringLiteral("Models"));
        f.select("modelList", QStringLiteral("sim-openai/gpt-sim"));
        auto *price = child<QDoubleSpinBox>(f.editor, "modelCostOutput");
        price->setFocus();
        price->selectAll();
        QTest::keyClicks(price, QStringLiteral("12.5"));
        const config::Config saved = f.save();
        QCOMPARE(saved.models.value(QStringLiteral("sim-openai/gpt-sim")).costOutput, 12.5);
        QCOMPARE(saved.models.value(QStringLiteral("sim-openai/gpt-sim")).costInput, 1.25);
    }

    void routesPageEditsTheAliases() {
        FileEditor f;
        f.showTab(QStringLiteral("Routes"));
        f.select("routeList", QStringLiteral("demo"));
        retype(child<QLineEdit>(f.editor, "routeAliases"), QStringLiteral("claude-[34]*, sonnet-latest"));
        const config::Config saved = f.save();
        QCOMPARE(saved.routes.value(QStringLiteral("demo")).aliases,
                 (QStringList{QStringLiteral("claude-[34]*"), QStringLiteral("sonnet-latest")}));
    }

    void tenantsPageEditsTheAdminFlag() {
        config::Config running = startingConfig();
        config::TenantConfig bob;
        bob.name = QStringLiteral("bob");
        bob.keyHashes = {credentials::gatewayKeyHash(credentials::newGatewayKey())};
        running.tenants.insert(bob.name, bob);
        FileEditor f(running);
        f.showTab(QStringLiteral("Tenants"));
        f.select("tenantList", QStringLiteral("bob"));
        auto *admin = child<QCheckBox>(f.editor, "tenantAdmin");
        QVERIFY(!admin->isChecked());
        QTest::mouseClick(admin, Qt::LeftButton, {}, QPoint(4, admin->height() / 2));
        const config::Config saved = f.save();
        QVERIFY(saved.tenants.value(QStringLiteral("bob")).admin);
        QCOMPARE(saved.tenants.value(QStringLiteral("bob")).keyHashes, bob.keyHashes);
    }

    // Probe K1 5: a first tenant added in the window was saved without admin, so once saved nobody could
    // use the admin API; `switchman key create` makes the first tenant an admin. Now both do.
    void theFirstTenantAddedIsAnAdmin() {
        config::Config running = startingConfig();
        running.tenants.clear();
        FileEditor f(running);
        QString name = QStringLiteral("alice");
        f.editor.askText = [&name](const QString &, const QString &, const QString &) { return name; };
        f.editor.showNewKey = [](const QString &, const QString &) {};
        f.showTab(QStringLiteral("Tenants"));
        QTest::mouseClick(child<QPushButton>(f.editor, "tenantAdd"), Qt::LeftButton);
        QVERIFY(child<QCheckBox>(f.editor, "tenantAdmin")->isChecked());
        name = QStringLiteral("bob");
        QTest::mouseClick(child<QPushButton>(f.editor, "tenantAdd"), Qt::LeftButton);
        QVERIFY(!child<QCheckBox>(f.editor, "tenantAdmin")->isChecked());
        const config::Config saved = f.save();
        QVERIFY(saved.tenants.value(QStringLiteral("alice")).admin);
        QVERIFY(!saved.tenants.value(QStringLiteral("bob")).admin);
        QCOMPARE(saved.tenants.value(QStringLiteral("alice")).keyHashes.size(), 1);
    }

    void generalPageEditsTheDeadline() {
        FileEditor f;
        f.showTab(QStringLiteral("Listener and failover"));
        auto *deadline = child<QSpinBox>(f.editor, "deadline");
        deadline->setFocus();
        deadline->selectAll();
        QTest::keyClicks(deadline, QStringLiteral("45000"));
        const config::Config saved = f.save();
        QCOMPARE(saved.failover.deadlineMs, 45000);
        QCOMPARE(saved.listen, startingConfig().listen);
    }

    void duplicateCopiesTheSelectedEntryUnderANewName() {
        FileEditor f;
        QString suggested;
        f.editor.askText = [&suggested](const QString &, const QString &, const QString &initial) {
            suggested = initial;
            return QStringLiteral("sim-openai-eu");
        };
        f.showTab(QStringLiteral("Providers"));
        f.select("providerList", QStringLiteral("sim-openai"));
        QTest::mouseClick(child<QPushButton>(f.editor, "providerDuplicate"), Qt::LeftButton);
        QCOMPARE(suggested, QStringLiteral("sim-openai-copy"));
        // The copy is selected, so the form edits it and not the original.
        QCOMPARE(child<QListWidget>(f.editor, "providerList")->currentItem()->text(), QStringLiteral("sim-openai-eu"));
        retype(child<QLineEdit>(f.editor, "providerRegion"), QStringLiteral("eu"));
        const config::Config saved = f.save();
        config::ProviderConfig expected = startingConfig().providers.value(QStringLiteral("sim-openai"));
        QCOMPARE(saved.providers.value(QStringLiteral("sim-openai")), expected);
        expected.id = QStringLiteral("sim-openai-eu");
        expected.region = QStringLiteral("eu");
        QCOMPARE(saved.providers.value(QStringLiteral("sim-openai-eu")), expected);

        // Remove takes it out again, and the neighbour is selected.
        QTest::mouseClick(child<QPushButton>(f.editor, "providerRemove"), Qt::LeftButton);
        QVERIFY(!f.editor.workingConfig().providers.contains(QStringLiteral("sim-openai-eu")));
        QVERIFY(child<QListWidget>(f.editor, "providerList")->currentItem());
        QCOMPARE(f.save().providers.keys(), startingConfig().providers.keys());
    }

    void duplicatedTenantGetsItsOwnKey() {
        // A key belongs to one tenant: the copy starts without the original's keys and is offered a new one.
        config::Config running = startingConfig();
        config::TenantConfig bob;
        bob.name = QStringLiteral("bob");
        bob.keyHashes = {credentials::gatewayKeyHash(credentials::newGatewayKey())};
        bob.regions = {QStringLiteral("eu")};
        running.tenants.insert(bob.name, bob);
        FileEditor f(running);
        f.editor.askText = [](const QString &, const QString &, const QString &) { return QStringLiteral("carol"); };
        QString shownKey;
        f.editor.showNewKey = [&shownKey](const QString &, const QString &key) { shownKey = key; };
        f.showTab(QStringLiteral("Tenants"));
        f.select("tenantList", QStringLiteral("bob"));
        QTest::mouseClick(child<QPushButton>(f.editor, "tenantDuplicate"), Qt::LeftButton);
        const config::Config saved = f.save();
        const config::TenantConfig carol = saved.tenants.value(QStringLiteral("carol"));
        QCOMPARE(carol.regions, bob.regions);
        QCOMPARE(carol.keyHashes, QStringList{credentials::gatewayKeyHash(shownKey)});
        QCOMPARE(saved.tenants.value(QStringLiteral("bob")).keyHashes, bob.keyHashes);
    }

    void routePickerOffersModelsAddedOnAnotherPage() {
        FileEditor f;
        f.editor.askText = [](const QString &, const QString &, const QString &) {
            return QStringLiteral("sim-openai/gpt-sim-mini");
        };
        f.showTab(QStringLiteral("Models"));
        QTest::mouseClick(child<QPushButton>(f.editor, "modelAdd"), Qt::LeftButton);
        f.showTab(QStringLiteral("Routes"));
        f.select("routeList", QStringLiteral("demo"));
        auto *picker = child<QComboBox>(f.editor, "candidatePicker");
        QVERIFY(picker->findText(QStringLiteral("sim-openai/gpt-sim-mini")) >= 0);
        picker->setCurrentText(QStringLiteral("sim-openai/gpt-sim-mini"));
        QTest::mouseClick(child<QPushButton>(f.editor, "candidateAdd"), Qt::LeftButton);
        QCOMPARE(f.save().routes.value(QStringLiteral("demo")).candidates.value(2),
                 QStringLiteral("sim-openai/gpt-sim-mini"));
    }

    void everyPageShowsTheWorkingCopy() {
        config::Config running = startingConfig();
        running.providers[QStringLiteral("sim-anthropic")].credentials = {QStringLiteral("keychain:anthropic-main"),
                                                                          QStringLiteral("env:ANTHROPIC_API_KEY")};
        running.models[QStringLiteral("sim-openai/gpt-sim")].tier = QStringLiteral("frontier");
        running.routes[QStringLiteral("demo")].maxFallbackCostMultiplier = 3;
        config::TenantConfig alice;
        alice.name = QStringLiteral("alice");
        alice.keyHashes = {credentials::gatewayKeyHash(credentials::newGatewayKey())};
        alice.providers = {QStringLiteral("sim-anthropic"), QStringLiteral("sim-openai")};
        alice.admin = true;
        running.tenants.insert(alice.name, alice);
        FileEditor f(running);
        QVERIFY(QTest::qWaitForWindowExposed(&f.editor));
        const struct {
            const char *tab;
            const char *list;
            const char *file;
        } pages[] = {{"Providers", "providerList", "6a-configuration-providers"},
                     {"Models", "modelList", "6b-configuration-models"},
                     {"Routes", "routeList", "6c-configuration-routes"},
                     {"Tenants", "tenantList", "6d-configuration-tenants"},
                     {"Listener and failover", nullptr, "6e-configuration-listener"}};
        for (const auto &page : pages) {
            f.showTab(QString::fromUtf8(page.tab));
            if (page.list) {
                auto *list = child<QListWidget>(f.editor, page.list);
                QVERIFY(list->count() > 0);
                QVERIFY2(list->currentItem(), page.tab); // the first entry is selected and its form filled
                QVERIFY(child<QWidget>(f.editor, (QByteArray(page.list).chopped(4) + "Form").constData())->isEnabled());
            }
            const QString dir = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
            if (!dir.isEmpty()) {
                QDir().mkpath(dir);
                QVERIFY(
                    f.editor.grab().save(QDir(dir).filePath(QString::fromUtf8(page.file) + QStringLiteral(".png"))));
            }
        }
        QCOMPARE(child<QLineEdit>(f.editor, "providerUrl")->text(), QStringLiteral("http://127.0.0.1:9"));
        QCOMPARE(child<QDoubleSpinBox>(f.editor, "modelCostInput")->value(), 3.0);
        QCOMPARE(child<QLineEdit>(f.editor, "tenantProviders")->text(), QStringLiteral("sim-anthropic, sim-openai"));
        QVERIFY(child<QCheckBox>(f.editor, "tenantAdmin")->isChecked());
        QCOMPARE(child<QLineEdit>(f.editor, "listen")->text(), QStringLiteral("127.0.0.1:4141"));
        QVERIFY(!f.editor.isDirty()); // showing is not editing
    }
};

QTEST_MAIN(TestConfigEditor)
#include "test_config_editor.moc"
