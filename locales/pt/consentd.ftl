# O que o dono lê no chat, em português do Brasil. Tratamos o dono por "você"; nos botões,
# "tocar". Plurais pelo CLDR: "one" vale para 0 e 1.

class-external = externo
class-spend = com custo
class-destructive = destrutivo

state-pending = aguardando sua resposta
state-card_shown = aguardando sua resposta
state-granted = aprovado
state-declined = recusado
state-expired = expirado: ninguém respondeu a tempo
state-refused = recusado pelo consentd
state-running = em execução
state-executed = concluído
state-failed = falhou
state-outcome_unknown = resultado desconhecido: pode ter sido executado ou não
state-withdrawn = retirado pelo agente: nada foi feito
state-approved = aprovado: o agente executa por conta própria

## Dinheiro: $usd e $usd_max já vêm escritos à brasileira (vírgula antes dos centavos, ponto
## nos milhares: "1.234,50"); o símbolo vem antes, com espaço não separável: "US$ 1.234,50".
## "US$", não "$", para não confundir com o real (R$).

## O cartão. Os valores ($label, $target, $value …) aparecem exatamente como foram pedidos.

card-urgent = URGENTE
card-title = { $label } ({ $class })
card-target = Destino: { $target }
card-field = { $name }: { $value }
card-cost = Custo: US${ "\u00A0" }{ $usd }
card-attachment = Anexo: { $name }, { $media_type }, { $size }, SHA-256 { $sha }
card-record = Pedido: { $id }
card-origin = Origem: { $origin }
card-agent-runs = Se você aprovar, o agente executará isto por conta própria. O consentd não executa nada.
card-deadline = Responda até { $when }
card-text = Texto:
card-text-parts = O texto está { $parts ->
        [one] na mensagem
       *[other] nas { $parts } mensagens
    } acima, SHA-256 { $sha }.
card-outcome = Desfecho: { $state }
card-outcome-by = Desfecho: { $state }. Decidido por { $name }.
card-result = Resultado: { $result }
card-reason = Motivo: { $reason }

## Um destino, ou o valor de um campo de uma só palavra, que pode não ser o que parece (UTS #39).
## Os nomes de escritas e de caracteres são os do Unicode, em todos os idiomas; $position conta
## caracteres a partir de 1.

card-warning-scripts = ⚠ Letras misturadas ou incomuns neste destino. Sistemas de escrita: { $scripts }. Caracteres fora do ASCII: { $chars }
card-warning-field-scripts = ⚠ Letras misturadas ou incomuns neste valor. Sistemas de escrita: { $scripts }. Caracteres fora do ASCII: { $chars }
card-warning-lookalike = ⚠ Parece { $known }, um destino que você já aprovou, mas é diferente: o { $position }º caractere aqui é { $ours } e lá é { $theirs }
card-warning-end = o fim

## Tamanhos: $whole e $tenth são as duas partes de um mesmo número decimal.

size-bytes = { $n } { $n ->
        [one] byte
       *[other] bytes
    }
size-kib = { $whole },{ $tenth } KiB
size-mib = { $whole },{ $tenth } MiB
size-gib = { $whole },{ $tenth } GiB

## Horários no fuso do dono: $hm é "14:35"; a data aparece quando não é hoje.

when-today = { $hm }
when-date = { $day } de { $month ->
        [1] janeiro
        [2] fevereiro
        [3] março
        [4] abril
        [5] maio
        [6] junho
        [7] julho
        [8] agosto
        [9] setembro
        [10] outubro
        [11] novembro
       *[12] dezembro
    }, às { $hm }

## Botões

button-yes = Sim
button-no = Não
button-no-say-why = Não, e dizer por quê…
button-resume = Retomar
button-grant = Conceder
button-decline = Recusar
button-decline-say-why = Recusar e dizer por quê…
button-stop = Parar
button-on = Ligar
button-off = Desligar

## Avisos

silenced = Os cartões de “{ $label }” estão pausados até { $until }: você recusou { $count ->
        [one] uma vez
       *[other] { $count } vezes seguidas
    }. Toque em Retomar para voltar a recebê-los agora.
press-rejected = Um toque em um botão não foi aceito e nada foi feito. Quem tocou: { $who }. Motivo: { $why ->
        [not_owner] não foi você
        [wrong_chat] veio de fora deste chat
        [bad_signature] a assinatura do botão não confere
        [not_open] o cartão já tinha sido respondido ou fechado
        [expired] o prazo do cartão tinha acabado
        [card_altered] a mensagem do cartão foi alterada depois de enviada: alguém com o token do bot pode estar editando as mensagens dele
       *[other] { $why }
    }.
altered = Uma mensagem com seus botões foi alterada depois que o consentd a enviou: alguém com o token do bot pode estar editando as mensagens dele. Seu toque valeu só porque desfaz algo (Não, Parar ou Desligar); nada foi executado.
expired-at-claim = Seu Sim para “{ $label }” ({ $id }) chegou a tempo, mas o consentd parou antes de executar a ação e, quando voltou, o prazo do cartão já tinha acabado. Nada foi executado; se ainda for preciso, o pedido terá de ser feito de novo.
outcome-unknown = O consentd reiniciou enquanto “{ $label }” ({ $id }) estava em execução. A ação pode ter sido executada ou não, e não será executada de novo automaticamente: verifique o que aconteceu.
disk-full = O disco do diretório de estado do consentd { $dir } está quase cheio: { $free_mib } MiB livres, abaixo dos { $floor_mib } MiB que ele reserva. Novos pedidos são recusados até haver espaço; o que já está em execução termina e fica registrado. Libere algum espaço, por favor.
reachable-again = O consentd ficou sem contato com você { $minutes ->
        [0] por menos de um minuto
        [one] por { $minutes } minuto
       *[other] por { $minutes } minutos
    }: { $cause ->
        [conflict] outro programa estava consultando o token deste bot
        [webhook] havia um webhook definido para este bot
        [blocked] o bot estava bloqueado neste chat
        [network] o Telegram não podia ser alcançado da máquina do consentd
        [server_error] os servidores do Telegram estavam falhando
       *[token_revoked] o Telegram recusava o token do bot
    }. A conexão voltou: os pedidos feitos nesse meio-tempo esperaram, e os cartões deles vêm a seguir.
resumed = Os cartões de “{ $label }” voltam a chegar.
not-owner = Desculpe, este bot só responde ao próprio dono.
not-accepted = Não aceito.
paired = Pareamento feito: este chat agora recebe os cartões do consentd. Envie /help para ver os comandos.
pairing-wrong-code = Código de pareamento incorreto. Execute “consentd pair” na máquina do consentd para obter outro.
pairing-locked = Códigos errados demais: o pareamento está bloqueado até { $until }.
help-title = Comandos:
command-pending = os pedidos aguardando sua resposta
command-mandates = as permissões temporárias em vigor, cada uma com Parar
command-categories = os tipos de ação, cada um com Ligar ou Desligar
command-quiet = horário de silêncio, como /quiet 23:00-08:00 ou /quiet off
command-nightcards = quantos cartões podem chegar à noite, como /nightcards 2
command-summary = quando chega o resumo da noite, como /summary 21:00
command-lang = o idioma: /lang en, /lang ru ou /lang pt
command-anchor = a âncora mais recente do diário, completa
command-help = esta lista
command-start = /start CÓDIGO — parear este chat com o consentd (o código vem de “consentd pair”)
pending-count = { $count ->
        [0] Nenhum pedido aguardando.
        [one] { $count } pedido aguardando:
       *[other] { $count } pedidos aguardando:
    }
pending-item = { $id } · { $label } · responder até { $until }
pending-item-waiting = { $id } · { $label } · ainda não mostrado

## Mandatos: permissões temporárias (valem por poucos dias; por isso não "permanentes").
## $usd e $usd_max são valores em dólares (veja "Dinheiro").

mandate-title = Permissão temporária: { $label } ({ $class })
mandate-until = Vale até: { $when }
mandate-limits = No máximo US${ "\u00A0" }{ $usd } e { $actions } { $actions ->
        [one] ação
       *[other] ações
    } por dia
mandate-limits-actions = No máximo { $actions } { $actions ->
        [one] ação
       *[other] ações
    } por dia
mandate-any-use = Qualquer uso: todas as ações de “{ $label }” (este tipo não tem destino)
mandate-reason = Motivo: { $reason }
mandate-explain = Dentro destes limites, as ações são executadas sem cartão; para cada uma você recebe um recibo com Parar.
mandate-usage = Hoje: { $actions } de { $max } { $max ->
        [one] ação
       *[other] ações
    }, US${ "\u00A0" }{ $usd } de US${ "\u00A0" }{ $usd_max }
mandate-usage-actions = Hoje: { $actions } de { $max } { $max ->
        [one] ação
       *[other] ações
    }
receipt-title = Executado sem cartão, pela permissão temporária { $id }:
mandates-count = { $count ->
        [0] Nenhuma permissão temporária em vigor.
        [one] { $count } permissão temporária em vigor:
       *[other] { $count } permissões temporárias em vigor:
    }
mandate-stopped = Permissão parada: as ações de “{ $label }” voltam a precisar do seu Sim.
mandate-ended = A permissão temporária { $id } para “{ $label }” terminou.

## As configurações e os comandos do dono.

usage-quiet = Uso: /quiet 23:00-08:00 ou /quiet off
usage-nightcards = Uso: /nightcards N, com N de 0 a { $max }
usage-summary = Uso: /summary HH:MM, como /summary 21:00
usage-lang = Uso: /lang en, /lang ru ou /lang pt
usage-no-argument = Este comando não recebe argumentos. Envie /help para ver a lista.
quiet-set = Horário de silêncio: { $from }–{ $to }.
quiet-off = O horário de silêncio está desligado.
nightcards-set = { $count ->
        [0] Nenhum cartão chega durante o horário de silêncio; todos esperam até de manhã.
        [one] No máximo { $count } cartão chega durante o horário de silêncio; os outros esperam até de manhã.
       *[other] No máximo { $count } cartões chegam durante o horário de silêncio; os outros esperam até de manhã.
    }
summary-set = O resumo da noite chega às { $hm }.
lang-set = Idioma: português.
anchor = Âncora do diário: { $anchor } (curta: { $short })
anchor-empty = O diário está vazio.
seal-key = Chave de verificação do diário, id { $id }: { $key } — guarde-a fora da máquina onde o consentd roda (aqui, num gerenciador de senhas, em papel). `consentd journal verify FILE --key KEY` confere cada selo com ela; quem a tiver pode forjar selos, então guarde-a como uma senha.
categories-title = Tipos de ação:
category-item = { $label } ({ $class }): { $on ->
        [yes] ligado
       *[no] desligado
    }
category-switched = “{ $label }” agora está { $on ->
        [yes] ligado
       *[no] desligado
    }.

## O resumo da noite.

summary-title = Resumo de { $date }
summary-counts = Pedidos: { $asked }. Aprovados: { $granted }. Recusados: { $declined }. Expirados: { $expired }.
summary-runs = Concluídos: { $executed }. Falharam: { $failed }. Recusados antes do cartão: { $refused }.
summary-mandate = { $id } · { $label }: { $actions } { $actions ->
        [one] ação
       *[other] ações
    }, US${ "\u00A0" }{ $usd }
summary-mandate-actions = { $id } · { $label }: { $actions } { $actions ->
        [one] ação
       *[other] ações
    }
summary-anchor = Âncora do diário: { $anchor } (curta: { $short })

## O chat do dono: o motivo de um não, as configurações atuais, uma mensagem avulsa, botões
## vencidos. Um aviso rápido ($label …) tem no máximo 200 caracteres.

card-reply-invite = Responda a esta mensagem até { $when } para dizer ao agente por quê, ou o que fazer no lugar.
decline-reason-sent = Enviado ao agente junto com o seu Não.
decline-reason-late = Tarde demais para este cartão: o agente já recebeu o não, sem motivo.
decline-reason-not-asked = Este Não chegou ao agente na hora, sem motivo. Para enviar um motivo com o Não, toque em “Não, e dizer por quê…”.
decline-reason-already = O agente já recebeu o seu motivo para este não.
decline-reason-hidden = Não enviado: sua resposta tem { $char } no caractere { $position }, que não aparece na tela. Escreva de novo sem ele.
decline-reason-not-nfc = Não enviado: a partir do caractere { $position } sua resposta não está na forma composta usual do Unicode (NFC). Digite o texto em vez de colá-lo.
text-not-an-answer = Uma mensagem nunca responde a um cartão: toque em Sim ou Não nele.
help-pointer = Eu só entendo comandos e botões. Envie /help para ver a lista.
quiet-current = Horas de silêncio: { $from }–{ $to }. Para mudar: /quiet 23:00-08:00 ou /quiet off
quiet-current-off = As horas de silêncio estão desligadas. Para definir: /quiet 23:00-08:00
nightcards-current = { $count ->
        [0] Nenhum cartão chega durante as horas de silêncio.
        [one] No máximo { $count } cartão chega durante as horas de silêncio.
       *[other] No máximo { $count } cartões chegam durante as horas de silêncio.
    } Para mudar: /nightcards N, com N de 0 a { $max }
stale-card-answered = Este cartão já foi respondido.
stale-card-withdrawn = O agente retirou este pedido; nada foi feito.
stale-card-expired = O prazo deste cartão acabou.
stale-origin = { $toast } (de { $origin })
stale-mandate-stopped = Esta permissão já foi parada.
stale-mandate-ended = Esta permissão já terminou.
stale-resumed = Estes cartões já voltaram a chegar.
stale-silenced-again = Estes cartões foram pausados de novo desde então: use o Retomar do aviso mais recente.
stale-category = “{ $label }” já está { $on ->
        [yes] ligado
       *[no] desligado
    }.
category-cannot-run = “{ $label }” não pode ser ligado: corrija primeiro { $key } (consentd check-config diz o que está errado).

# Uma permissão temporária sugerida: o dono diz sim à mesma coisa repetidas vezes.
suggest-title = Você disse sim a “{ $label }” { $approvals } { $approvals ->
        [one] vez
       *[other] vezes
    } nos últimos 7 dias.
suggest-would-cover = Uma permissão temporária com estes termos as teria coberto:
suggest-days = Por { $days } { $days ->
        [one] dia
       *[other] dias
    }
suggest-explain = “Ver termos” mostra-os num cartão de permissão. Nada muda até você tocar em Conceder nele; se ignorar, isto não é sugerido de novo por 7 dias.
suggest-card = Sugerido pelo consentd após { $approvals } { $approvals ->
        [one] sim seu
       *[other] sins seus
    } em 7 dias; o agente não pediu isto.
button-suggest = Ver termos
stale-suggestion = Esta sugestão já foi aberta ou terminou.
suggest-based-on = Você aprovou até { $busiest } por dia; isto permite { $allows }.
suggest-based-on-money = Você aprovou até US${ "\u00A0" }{ $usd_busiest } por dia; isto permite US${ "\u00A0" }{ $usd_allows }.
button-raise = Aumentar hoje
receipt-raise = Isso esgotou o limite de hoje. “Aumentar hoje” o eleva, até o fim do dia, para:
mandate-raised-today = Aumentado por você só para hoje; amanhã volta ao concedido.
raise-done = “{ $label }”: aumentado até o fim do dia. Amanhã volta ao concedido.
stale-raise = Isto já foi aumentado hoje, ou não pode mais ser.

# Regras exatas ("Sempre aqui"): o cartão de um hook, /rules, o resumo da noite.
card-hook = Chamada: { $agent } · { $tool } · em { $cwd }
button-always = Sempre aqui
card-rule-saved = Salvo como regra: esta mesma chamada deste agente nesta pasta passará sem cartão. /rules lista e remove as regras.
button-remove = Remover
command-rules = as regras exatas salvas (Sempre aqui), cada uma com Remover
rules-count = { $count ->
        [0] Nenhuma regra salva. O cartão de um hook de agente oferece Sempre aqui para salvar uma.
        [one] { $count } regra salva:
       *[other] { $count } regras salvas:
    }
rule-item = { $agent } · { $tool } · em { $cwd }
    Salva { $saved }; { $uses ->
        [0] ainda não usada
        [one] usada uma vez
       *[other] usada { $uses } vezes
    }. Regra { $id }, SHA-256 do comando { $sha }:
rule-removed = Removida: esta chamada precisa do seu Sim de novo.
stale-rule-removed = Esta regra já foi removida.
stale-from-before-upgrade = Este botão foi desenhado antes de o consentd ser atualizado ou de a sua chave mudar, e já não responde. Peça de novo.
summary-rules = Passaram por regras salvas: { $count }.
summary-origins = Pedidos por sockets rotulados: { $origins }.
silenced-session = Só para uma sessão: { $session }. Os cartões de outras sessões continuam chegando.
