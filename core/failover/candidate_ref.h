#pragma once
#include <QString>

namespace sw::failover {

// What the failover loop knows of one candidate.
struct CandidateRef {
    QString provider;
    QString modelId;
    QString baseUrl;
    QString name() const { return provider + QLatin1Char('/') + modelId; }
    // record: candidateKey = provider \0 id \0 baseUrl
    QString key() const { return provider + QChar(0) + modelId + QChar(0) + baseUrl; }
};

} // namespace sw::failover
