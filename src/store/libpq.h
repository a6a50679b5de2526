// libpq, loaded at run time (dlopen) the first time a PostgreSQL store or lease connects, as the
// agent loads NVML: a `baton` that never speaks to PostgreSQL (every client command, agents,
// SQLite controllers) does not load libpq and the ~20 libraries it brings (Kerberos, LDAP,
// GnuTLS, ...) at each start. libpq-fe.h still gives the types and signatures; each function
// the store uses is a pointer of the same name in baton::store, which hides libpq's own
// declaration, so the code calls PQexec(...) as before. Only store/*.cc include this.
#pragma once

#include <libpq-fe.h>

#include "core/status.h"

// Every libpq function the store and the lease call.
#define BATON_LIBPQ_FUNCTIONS(X) \
  X(PQclear)                     \
  X(PQcmdTuples)                 \
  X(PQconnectdbParams)           \
  X(PQenterPipelineMode)         \
  X(PQerrorMessage)              \
  X(PQexec)                      \
  X(PQexecParams)                \
  X(PQexitPipelineMode)          \
  X(PQfinish)                    \
  X(PQgetResult)                 \
  X(PQgetisnull)                 \
  X(PQgetvalue)                  \
  X(PQntuples)                   \
  X(PQpipelineStatus)            \
  X(PQpipelineSync)              \
  X(PQprepare)                   \
  X(PQreset)                     \
  X(PQresultErrorField)          \
  X(PQresultErrorMessage)        \
  X(PQresultStatus)              \
  X(PQsendQueryParams)           \
  X(PQsendQueryPrepared)         \
  X(PQstatus)                    \
  X(PQtransactionStatus)

namespace baton::store {

#define BATON_LIBPQ_DECLARE(name) extern decltype(&::name) name;
BATON_LIBPQ_FUNCTIONS(BATON_LIBPQ_DECLARE)
#undef BATON_LIBPQ_DECLARE

// Loads libpq (libpq.so.5) and every function above, once; later calls return the first
// answer. Unavailable, naming the library and what to install, when it cannot be loaded.
Status LoadLibpq();

}  // namespace baton::store
