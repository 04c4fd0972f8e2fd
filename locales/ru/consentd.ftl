# Что владелец читает в чате, по-русски. К владельцу обращаемся на «вы», без родовых окончаний.
# Счётные слова — по CLDR: one (1, 21), few (2–4, 22), many (5–20, 25); числа всегда целые.

class-external = внешнее
class-spend = платное
class-destructive = необратимое

state-pending = ждёт вашего ответа
state-card_shown = ждёт вашего ответа
state-granted = одобрено
state-declined = отклонено
state-expired = срок истёк — никто не ответил вовремя
state-refused = отказано
state-running = выполняется
state-executed = выполнено
state-failed = не удалось
state-outcome_unknown = результат неизвестен: действие могло выполниться, а могло и нет
state-withdrawn = отозвано агентом: ничего не сделано
state-approved = одобрено: агент выполнит это сам

## Деньги: $usd и $usd_max приходят уже записанными по-русски (запятая перед центами,
## неразрывный пробел между тысячами: «1 234,50»); знак доллара ставим после числа, через
## неразрывный пробел: «1 234,50 $».

## Карточка. Значения ($label, $target, $value …) показываются ровно так, как их прислали.

card-urgent = СРОЧНО
card-title = { $label } ({ $class })
card-target = Цель: { $target }
card-field = { $name }: { $value }
card-cost = Стоимость: { $usd }{ "\u00A0" }$
card-attachment = Вложение: { $name }, { $media_type }, { $size }, SHA-256 { $sha }
card-record = Запрос: { $id }
card-origin = Откуда: { $origin }
card-agent-runs = Если вы одобрите, агент выполнит это сам. consentd ничего не запускает.
card-deadline = Ответьте до { $when }
card-text = Текст:
card-text-parts = Текст — в { $parts } { $parts ->
        [one] сообщении
        [few] сообщениях
       *[many] сообщениях
    } выше, SHA-256 { $sha }.
card-outcome = Итог: { $state }
card-outcome-by = Итог: { $state }. Кто решил: { $name }.
card-result = Результат: { $result }
card-reason = Причина: { $reason }

## Цель или значение поля в одно слово, которые могут быть не тем, чем кажутся (UTS #39).
## Названия письменностей и символов — из Unicode, на всех языках; $position считает символы с 1.

card-warning-scripts = ⚠ В цели смешаны письменности или есть необычные буквы. Письменности: { $scripts }. Символы вне ASCII: { $chars }
card-warning-field-scripts = ⚠ В значении смешаны письменности или есть необычные буквы. Письменности: { $scripts }. Символы вне ASCII: { $chars }
card-warning-lookalike = ⚠ Похоже на { $known } (цель, которую вы уже одобряли), но не совпадает: { $position }-й символ здесь — { $ours }, а там — { $theirs }
card-warning-end = конец

## Размеры: $whole и $tenth — целая и десятая части одного числа.

size-bytes = { $n } { $n ->
        [one] байт
        [few] байта
       *[many] байт
    }
size-kib = { $whole },{ $tenth } КиБ
size-mib = { $whole },{ $tenth } МиБ
size-gib = { $whole },{ $tenth } ГиБ

## Время в поясе владельца: $hm — «14:35»; дата — если не сегодня.

when-today = { $hm }
when-date = { $day } { $month ->
        [1] января
        [2] февраля
        [3] марта
        [4] апреля
        [5] мая
        [6] июня
        [7] июля
        [8] августа
        [9] сентября
        [10] октября
        [11] ноября
       *[12] декабря
    }, { $hm }

## Кнопки

button-yes = Да
button-no = Нет
button-resume = Возобновить
button-grant = Разрешить
button-decline = Отклонить
button-stop = Остановить
button-on = Включить
button-off = Выключить

## Уведомления

silenced = Карточек «{ $label }» не будет до { $until }: { $count ->
        [1] вы ответили «Нет»
        [one] вы { $count } раз подряд ответили «Нет»
        [few] вы { $count } раза подряд ответили «Нет»
       *[many] вы { $count } раз подряд ответили «Нет»
    }. Нажмите «Возобновить», чтобы снова их получать.
press-rejected = Нажатие кнопки не принято, ничего не сделано. Кто нажал: { $who }. Почему: { $why ->
        [not_owner] нажали не вы
        [wrong_chat] нажатие пришло не из этого чата
        [bad_signature] подпись кнопки не прошла проверку
        [not_open] на карточку уже ответили или она закрыта
        [expired] время на ответ вышло
        [card_altered] сообщение с карточкой изменили после отправки: возможно, кто-то с токеном бота правит его сообщения
       *[other] { $why }
    }.
altered = Сообщение с вашими кнопками изменили после того, как consentd его отправил: возможно, кто-то с токеном бота правит его сообщения. Ваше нажатие засчитано только потому, что оно что-то отменяет («Нет», «Остановить» или «Выключить»); ничего не выполнено.
expired-at-claim = Ваше «Да» на «{ $label }» ({ $id }) пришло вовремя, но consentd остановился раньше, чем выполнил действие, а когда запустился снова, время карточки уже вышло. Ничего не выполнено; если это ещё нужно, запрос придётся отправить заново.
outcome-unknown = consentd перезапустился, пока выполнялось действие «{ $label }» ({ $id }). Оно могло выполниться, а могло и нет, и само повторно не запустится: проверьте, что произошло.
resumed = Карточки «{ $label }» снова будут приходить.
not-owner = Извините, этот бот отвечает только своему владельцу.
not-accepted = Не принято.
paired = Готово: теперь карточки consentd приходят в этот чат. Команды — /help.
pairing-wrong-code = Код не подошёл. Чтобы получить новый, запустите «consentd pair» на машине с consentd.
pairing-locked = Слишком много неверных кодов: привязка заблокирована до { $until }.
help-title = Команды:
command-pending = запросы, которые ждут вашего ответа
command-mandates = действующие временные разрешения, у каждого кнопка «Остановить»
command-categories = виды действий, у каждого кнопка «Включить» или «Выключить»
command-quiet = тихие часы, например /quiet 23:00-08:00 или /quiet off
command-nightcards = сколько карточек может прийти ночью, например /nightcards 2
command-summary = когда приходит вечерняя сводка, например /summary 21:00
command-lang = язык: /lang en, /lang ru или /lang pt
command-anchor = последний якорь журнала полностью
command-help = этот список
command-start = /start КОД — привязать этот чат к consentd (код выдаёт «consentd pair»)
pending-count = { $count ->
        [0] Ожидающих запросов нет.
        [one] { $count } запрос ждёт ответа:
        [few] { $count } запроса ждут ответа:
       *[many] { $count } запросов ждут ответа:
    }
pending-item = { $id } · { $label } · ответить до { $until }
pending-item-waiting = { $id } · { $label } · ещё не показан

## Мандаты: временные разрешения (не дольше нескольких дней, поэтому не «постоянные»).
## $usd и $usd_max — суммы в долларах (см. «Деньги»).

mandate-title = Временное разрешение: { $label } ({ $class })
mandate-until = Действует до: { $when }
mandate-limits = Не больше { $usd }{ "\u00A0" }$ и { $actions } { $actions ->
        [one] действия
        [few] действий
       *[many] действий
    } в день
mandate-limits-actions = Не больше { $actions } { $actions ->
        [one] действия
        [few] действий
       *[many] действий
    } в день
mandate-any-use = Охватывает все действия «{ $label }» (у этого вида нет цели)
mandate-reason = Причина: { $reason }
mandate-explain = В этих рамках действия выполняются без карточки; о каждом придёт отчёт с кнопкой «Остановить».
mandate-usage = Сегодня: { $actions } из { $max } { $max ->
        [one] действия
        [few] действий
       *[many] действий
    }, { $usd }{ "\u00A0" }$ из { $usd_max }{ "\u00A0" }$
mandate-usage-actions = Сегодня: { $actions } из { $max } { $max ->
        [one] действия
        [few] действий
       *[many] действий
    }
receipt-title = Выполнено без карточки, по временному разрешению { $id }:
mandates-count = { $count ->
        [0] Действующих временных разрешений нет.
        [one] Действует { $count } временное разрешение:
        [few] Действуют { $count } временных разрешения:
       *[many] Действуют { $count } временных разрешений:
    }
mandate-stopped = Остановлено: для «{ $label }» снова нужно ваше «Да».
mandate-ended = Временное разрешение { $id } для «{ $label }» закончилось.

## Настройки и команды владельца.

usage-quiet = Формат: /quiet 23:00-08:00 или /quiet off
usage-nightcards = Формат: /nightcards N, где N от 0 до { $max }
usage-summary = Формат: /summary ЧЧ:ММ, например /summary 21:00
usage-lang = Формат: /lang en, /lang ru или /lang pt
usage-no-argument = У этой команды нет параметров. Список команд — /help.
quiet-set = Тихие часы: { $from }–{ $to }.
quiet-off = Тихие часы выключены.
nightcards-set = { $count ->
        [0] В тихие часы карточки не приходят; все подождут до утра.
        [one] В тихие часы придёт не больше { $count } карточки; остальные подождут до утра.
        [few] В тихие часы придёт не больше { $count } карточек; остальные подождут до утра.
       *[many] В тихие часы придёт не больше { $count } карточек; остальные подождут до утра.
    }
summary-set = Вечерняя сводка приходит в { $hm }.
lang-set = Язык: русский.
anchor = Якорь журнала: { $anchor } (кратко: { $short })
anchor-empty = Журнал пуст.
categories-title = Виды действий:
category-item = { $label } ({ $class }): { $on ->
        [yes] включено
       *[no] выключено
    }
category-switched = «{ $label }»: теперь { $on ->
        [yes] включено
       *[no] выключено
    }.

## Вечерняя сводка.

summary-title = Сводка за { $date }
summary-counts = Запрошено: { $asked }. Одобрено: { $granted }. Отклонено: { $declined }. Истекло: { $expired }.
summary-runs = Выполнено: { $executed }. Не удалось: { $failed }. Отказано до карточки: { $refused }.
summary-mandate = { $id } · { $label }: { $actions } { $actions ->
        [one] действие
        [few] действия
       *[many] действий
    }, { $usd }{ "\u00A0" }$
summary-mandate-actions = { $id } · { $label }: { $actions } { $actions ->
        [one] действие
        [few] действия
       *[many] действий
    }
summary-anchor = Якорь журнала: { $anchor } (кратко: { $short })

## Чат владельца: причина отказа, текущие настройки, случайное сообщение, устаревшие кнопки.
## Всплывающий ответ ($label …) — не длиннее 200 символов.

card-reply-invite = Ответьте на это сообщение до { $when }, чтобы объяснить агенту причину или что сделать иначе.
decline-reason-sent = Отправлено агенту вместе с вашим «Нет».
decline-reason-late = Для этой карточки уже поздно: агент уже получил «нет» без причины.
decline-reason-already = Агент уже получил вашу причину для этого «нет».
decline-reason-hidden = Не отправлено: в ответе есть { $char } (символ { $position }), которого не видно на экране. Напишите ответ заново без него.
decline-reason-not-nfc = Не отправлено: начиная с символа { $position } ответ не в обычной составной форме Юникода (NFC). Наберите его вручную, а не вставляйте.
text-not-an-answer = Сообщение не отвечает на карточку: нажмите на ней «Да» или «Нет».
help-pointer = Я понимаю только команды и кнопки. Список команд — /help.
quiet-current = Тихие часы: { $from }–{ $to }. Изменить: /quiet 23:00-08:00 или /quiet off
quiet-current-off = Тихие часы выключены. Включить: /quiet 23:00-08:00
nightcards-current = { $count ->
        [0] В тихие часы карточки не приходят.
        [one] В тихие часы приходит не больше { $count } карточки.
        [few] В тихие часы приходит не больше { $count } карточек.
       *[many] В тихие часы приходит не больше { $count } карточек.
    } Изменить: /nightcards N, где N от 0 до { $max }
stale-card-answered = На эту карточку уже ответили.
stale-card-withdrawn = Агент отозвал этот запрос; ничего не сделано.
stale-card-expired = Время этой карточки вышло.
stale-mandate-stopped = Это разрешение уже остановлено.
stale-mandate-ended = Срок этого разрешения уже закончился.
stale-resumed = Эти карточки уже снова приходят.
stale-silenced-again = С тех пор эти карточки снова приостановлены: нажмите «Возобновить» в последнем уведомлении.
stale-category = «{ $label }» уже { $on ->
        [yes] включено
       *[no] выключено
    }.
category-cannot-run = «{ $label }» нельзя включить: сначала исправьте { $key } (consentd check-config скажет, что не так).
