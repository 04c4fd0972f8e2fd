# O que o dono lê no chat, em português.

class-external = externo
class-spend = gasto
class-destructive = destrutivo

state-pending = aguardando sua resposta
state-card_shown = aguardando sua resposta
state-granted = aprovado
state-declined = recusado
state-expired = expirado: ninguém respondeu a tempo
state-refused = recusado pelo consentd
state-running = em execução
state-executed = feito
state-failed = falhou
state-outcome_unknown = resultado desconhecido: pode ter sido executado ou não
